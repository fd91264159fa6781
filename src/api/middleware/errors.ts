import type { Middleware, ParameterizedContext } from 'koa';
import { GatewayError, InvalidRequestError, openAiErrorBody, PayloadTooLargeError } from '../errors';
import type { GatewayState } from '../context';
import { fromDomainError } from '../domain-errors';

/**
 * SQLSTATEs of text the store cannot hold: a NUL character (22021 in a text column, 22P05 in
 * jsonb) or a byte sequence it cannot encode. Whatever the statement, the text came from the
 * request (key names, quota reasons), so it is the client's 400, not a 500; the statement
 * failed, so nothing was written.
 */
const UNSTORABLE_TEXT = new Set(['22021', '22P05']);

interface HttpishError {
  code?: unknown;
  status?: number;
  statusCode?: number;
  type?: string;
  expose?: boolean;
  message?: string;
}

/**
 * Maps every failure to a status and an OpenAI-style body. Errors thrown by the body
 * parser (bad JSON, over the limit) are client errors, never a 500; anything unexpected is
 * logged with the request id and answered with a 500 that says only that.
 */
export function toGatewayError(err: unknown, bodyLimit: number): GatewayError | null {
  if (err instanceof GatewayError) return err;
  const domain = fromDomainError(err);
  if (domain) return domain;
  const e = err as HttpishError;
  const status = e?.status ?? e?.statusCode;
  if (typeof e?.code === 'string' && UNSTORABLE_TEXT.has(e.code)) {
    return new InvalidRequestError('A text value in the request contains a character that cannot be stored (NUL).', null, 'invalid_text');
  }
  if (status === 413 || e?.type === 'entity.too.large') return new PayloadTooLargeError(bodyLimit);
  if (status === 415) return new InvalidRequestError(e.message ?? 'Unsupported content type.', null, 'unsupported_content_type');
  if (status === 400 || e?.type === 'entity.parse.failed') {
    return new InvalidRequestError('The request body is not valid JSON.', null, 'invalid_json');
  }
  if (status !== undefined && status >= 400 && status < 500 && e.expose) {
    return new GatewayError(status, 'invalid_request_error', e.message ?? 'Bad request.');
  }
  return null;
}

/**
 * Status, headers and body of a failed request: the error's own mapping, or a logged 500 that
 * says only the request id. `body` renders the endpoint family's error shape.
 */
export function respondWithError(
  ctx: ParameterizedContext<GatewayState>,
  err: unknown,
  bodyLimit: number,
  body: (mapped: GatewayError) => unknown,
  internalType = 'server_error',
): void {
  let mapped = toGatewayError(err, bodyLimit);
  if (!mapped) {
    // Name, message and stack only: a driver's error carries more fields (a database error's
    // detail, a failed request's body), and those may hold what a client sent.
    const e = err instanceof Error ? err : new Error(String(err));
    ctx.state.log.error({ err: { name: e.name, message: e.message, stack: e.stack } }, 'unhandled error');
    mapped = new GatewayError(500, internalType, `Internal error; quote request id ${ctx.state.requestId} when reporting it.`);
  }
  ctx.status = mapped.status;
  // For the metrics (a 429 is counted by its code), which see the answer after this.
  ctx.state.errorCode = mapped.code ?? mapped.type;
  for (const [k, v] of Object.entries(mapped.headers)) ctx.set(k, v);
  ctx.body = body(mapped);
}

/** Another error shape for some paths (the family's own middleware answers most of their errors). */
export interface OtherErrorShape {
  paths: (path: string) => boolean;
  body: (err: GatewayError, ctx: ParameterizedContext<GatewayState>) => unknown;
}

export function openAiErrors(bodyLimit: number, other?: OtherErrorShape): Middleware<GatewayState> {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new GatewayError(404, 'invalid_request_error', `Unknown route: ${ctx.method} ${ctx.path}`, null, 'unknown_route');
      }
    } catch (err) {
      const render = other?.paths(ctx.path) ? (mapped: GatewayError) => other.body(mapped, ctx) : openAiErrorBody;
      respondWithError(ctx, err, bodyLimit, render);
    }
  };
}
