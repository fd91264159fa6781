import type { Middleware, ParameterizedContext } from 'koa';
import { GatewayError, InvalidRequestError, openAiErrorBody, PayloadTooLargeError } from '../errors';
import type { GatewayState } from '../context';

interface HttpishError {
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
  const e = err as HttpishError;
  const status = e?.status ?? e?.statusCode;
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
    ctx.state.log.error({ err }, 'unhandled error');
    mapped = new GatewayError(500, internalType, `Internal error; quote request id ${ctx.state.requestId} when reporting it.`);
  }
  ctx.status = mapped.status;
  for (const [k, v] of Object.entries(mapped.headers)) ctx.set(k, v);
  ctx.body = body(mapped);
}

export function openAiErrors(bodyLimit: number): Middleware<GatewayState> {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new GatewayError(404, 'invalid_request_error', `Unknown route: ${ctx.method} ${ctx.path}`, null, 'unknown_route');
      }
    } catch (err) {
      respondWithError(ctx, err, bodyLimit, openAiErrorBody);
    }
  };
}
