import type { Logger } from 'pino';
import type { ApiKey } from '../store/keys';
import type { AuthFailureGate } from './middleware/auth-failures';
import { AuthenticationError } from './errors';

/** What the middleware chain puts on ctx.state for the handlers after it. */
export interface GatewayState {
  requestId: string;
  /** The id of the trace this request's span belongs to, when tracing is on and it is sampled. */
  traceId?: string;
  /** process.hrtime.bigint() when the request arrived (openai-processing-ms). */
  receivedAt: bigint;
  log: Logger;
  apiKey?: ApiKey;
  /** A JSON body's bytes (jsonBody), so a proxied request can be forwarded unchanged. */
  rawBody?: Buffer;
  /** The per-address limit of failed key authentications (authFailureGate), for the key middleware. */
  authFailures?: AuthFailureGate;
  /** The code of the error the request was answered with (respondWithError), for the metrics. */
  errorCode?: string;
}

/**
 * The route pattern @koa/router matched (`/v1/videos/:id`), undefined when no route did: what
 * metrics and spans name a request by, so ids never become label values or span names.
 */
export function matchedRoute(ctx: object): string | undefined {
  const matched = (ctx as { _matchedRoute?: unknown })._matchedRoute;
  return typeof matched === 'string' ? matched : undefined;
}

/**
 * The key that authenticated this request. Routes behind the key middleware always have one;
 * a route mounted without it gets a 401 rather than a crash.
 */
export function callerKey(state: GatewayState): ApiKey {
  if (!state.apiKey) throw new AuthenticationError();
  return state.apiKey;
}
