/**
 * One small error hierarchy, mapped to status and body at the edge
 * (OpenAI-style here; the messages endpoint maps the same classes to Anthropic's shape).
 */
export class GatewayError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    // An answer to the client, not a fault: nothing reads its stack, and capturing one through
    // Koa's async middleware chain cost a refused request (401, 400) 8-15 % of its CPU, which a
    // flood of bad requests would spend on the gateway's time.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
  }
}

export class InvalidRequestError extends GatewayError {
  constructor(message: string, param: string | null = null, code: string | null = 'invalid_value') {
    super(400, 'invalid_request_error', message, param, code);
  }
}

export class AuthenticationError extends GatewayError {
  constructor(message = 'Invalid API key. Use a key issued by this gateway.') {
    super(401, 'invalid_request_error', message, null, 'invalid_api_key');
  }
}

export class NotFoundError extends GatewayError {
  constructor(message: string, param: string | null = null) {
    super(404, 'invalid_request_error', message, param, 'not_found');
  }
}

export class ConflictError extends GatewayError {
  constructor(message: string, param: string | null = null, code = 'invalid_state') {
    super(409, 'invalid_request_error', message, param, code);
  }
}

export class PayloadTooLargeError extends GatewayError {
  /** The body's byte limit, or what else was over its limit (a form's fields, files). */
  constructor(limit: number | string) {
    super(413, 'invalid_request_error', typeof limit === 'number' ? `Request body exceeds the limit of ${limit} bytes.` : limit, null, 'request_too_large');
  }
}

export class ServiceUnavailableError extends GatewayError {
  constructor(message: string, code = 'service_unavailable', retryAfterSeconds = 5) {
    super(503, 'server_error', message, null, code, { 'retry-after': String(retryAfterSeconds) });
  }
}

/** Spec 7: the key's balance does not cover the request (OpenAI's own code for this is insufficient_quota). */
export class InsufficientQuotaError extends GatewayError {
  constructor(message: string) {
    super(402, 'insufficient_quota', message, null, 'insufficient_quota');
  }
}

/** Spec 7: too many requests for the key's limits; Retry-After says when to come back. */
export class RateLimitedError extends GatewayError {
  constructor(message: string, retryAfterSeconds: number, code = 'rate_limit_exceeded', headers: Record<string, string> = {}) {
    super(429, 'rate_limit_error', message, null, code, { ...headers, 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
  }
}

export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export function openAiErrorBody(err: GatewayError): OpenAiErrorBody {
  return { error: { message: err.message, type: err.type, param: err.param, code: err.code } };
}
