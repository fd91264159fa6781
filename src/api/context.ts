import type { Logger } from 'pino';
import type { ApiKey } from '../store/keys';
import type { AuthFailureGate } from './middleware/auth-failures';

/** What the middleware chain puts on ctx.state for the handlers after it. */
export interface GatewayState {
  requestId: string;
  log: Logger;
  apiKey?: ApiKey;
  /** A JSON body's bytes (jsonBody), so a proxied request can be forwarded unchanged. */
  rawBody?: Buffer;
  /** The per-address limit of failed key authentications (authFailureGate), for the key middleware. */
  authFailures?: AuthFailureGate;
}
