import type { ParameterizedContext } from 'koa';
import type { ConsoleSession, ConsoleSessions } from '../../store/console-sessions';
import type { ApiKey, KeyStore } from '../../store/keys';
import type { GatewayState } from '../context';
import { AuthenticationError, GatewayError } from '../errors';
import { isHttpsRequest, sessionIdOf } from './cookie';
import { checkCsrf, ownOrigins } from './csrf';

/** What the auth middlewares need to accept a console session cookie instead of a header. */
export interface ConsoleAuth {
  sessions: ConsoleSessions;
  keys: KeyStore;
  trustProxy: boolean;
  /** PUBLIC_BASE_URL's origin: a page served under it may send state-changing requests. */
  publicOrigin: string;
}

export class SessionExpiredError extends GatewayError {
  constructor() {
    super(401, 'invalid_request_error', 'The console session has ended (signed out, expired, or its key revoked). Sign in again.', null, 'session_expired');
  }
}

/**
 * True when the request names no credential in a header: only then is the cookie looked at, so
 * a bearer request costs nothing more than before and a header always wins over a cookie.
 */
export function usesCookie(ctx: ParameterizedContext<GatewayState>): boolean {
  return ctx.get('authorization') === '' && ctx.get('x-api-key') === '' && ctx.get('cookie') !== '';
}

/** The live session of the request's cookie (CSRF checked), null without the cookie, 401 when it has ended. */
export async function cookieSession(ctx: ParameterizedContext<GatewayState>, auth: ConsoleAuth, csrf = true): Promise<ConsoleSession | null> {
  const id = sessionIdOf(ctx.get('cookie'));
  if (id === null) return null;
  const session = await auth.sessions.find(id);
  if (!session) throw new SessionExpiredError();
  if (csrf) checkCsrf(ctx, session.csrfToken, ownOrigins(ctx, isHttpsRequest(ctx, auth.trustProxy), auth.publicOrigin));
  return session;
}

/**
 * The key a `key` session acts as (bearerAuth, anyKeyAuth), or null without a session cookie.
 * An operator's session has no key: 401, as a missing key.
 */
export async function keyFromCookie(ctx: ParameterizedContext<GatewayState>, auth: ConsoleAuth): Promise<ApiKey | null> {
  const session = await cookieSession(ctx, auth, false);
  if (!session) return null;
  if (session.role !== 'key' || session.keyId === null) {
    throw new AuthenticationError('An operator console session has no API key; sign in with a key to use this endpoint.');
  }
  checkCsrf(ctx, session.csrfToken, ownOrigins(ctx, isHttpsRequest(ctx, auth.trustProxy), auth.publicOrigin));
  const key = await auth.keys.get(session.keyId);
  // Revoked after the session was read: refused like any revoked key.
  if (!key || key.revokedAt !== null) throw new SessionExpiredError();
  return key;
}

/** True for an `admin` session (adminAuth); false without a session cookie; 403 for a key's session. */
export async function adminFromCookie(ctx: ParameterizedContext<GatewayState>, auth: ConsoleAuth): Promise<boolean> {
  const session = await cookieSession(ctx, auth, false);
  if (!session) return false;
  if (session.role !== 'admin') {
    throw new GatewayError(
      403,
      'invalid_request_error',
      'Admin endpoints need an operator session (sign in with the admin token).',
      null,
      'admin_session_required',
    );
  }
  checkCsrf(ctx, session.csrfToken, ownOrigins(ctx, isHttpsRequest(ctx, auth.trustProxy), auth.publicOrigin));
  return true;
}
