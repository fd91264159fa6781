import { createHash, timingSafeEqual } from 'node:crypto';
import type { ParameterizedContext } from 'koa';
import type { GatewayState } from '../context';
import { GatewayError } from '../errors';

/** Methods that change nothing: a cookie-authenticated request with one of these needs no CSRF token. */
const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

export class CsrfError extends GatewayError {
  constructor(message: string) {
    super(403, 'invalid_request_error', message, null, 'csrf_failed');
  }
}

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/** Constant time whatever the lengths: the digests are compared, never the strings. */
export function tokensMatch(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected)) && given !== '';
}

/**
 * The origins a console page may send state-changing requests from: the gateway itself as the
 * browser reached it (Host, with the scheme of the request), and PUBLIC_BASE_URL's origin.
 */
export function ownOrigins(ctx: ParameterizedContext<GatewayState>, https: boolean, publicOrigin: string): string[] {
  const host = ctx.get('host');
  return host === '' ? [publicOrigin] : [`${https ? 'https' : 'http'}://${host.toLowerCase()}`, publicOrigin];
}

/**
 * The CSRF rule of cookie-authenticated requests: any method but GET/HEAD/OPTIONS carries the
 * session's token in X-CSRF-Token, and an Origin header, when present, is the gateway's own.
 * SameSite=Strict already keeps the cookie off other sites' requests; this is the second lock.
 */
export function checkCsrf(ctx: ParameterizedContext<GatewayState>, csrfToken: string, origins: readonly string[]): void {
  if (SAFE_METHODS.has(ctx.method)) return;
  if (!tokensMatch(ctx.get('x-csrf-token'), csrfToken)) {
    throw new CsrfError('A console request that changes something needs the X-CSRF-Token header of its session (GET /console/api/session).');
  }
  const origin = ctx.get('origin');
  if (origin !== '' && !origins.includes(origin.toLowerCase())) {
    throw new CsrfError('The request comes from another origin than the gateway.');
  }
}
