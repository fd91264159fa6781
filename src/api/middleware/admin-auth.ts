import { createHash, timingSafeEqual } from 'node:crypto';
import type { Middleware } from 'koa';
import { GatewayError } from '../errors';
import { bearerToken } from './auth';
import type { GatewayState } from '../context';
import { adminFromCookie, usesCookie, type ConsoleAuth } from '../console/cookie-auth';

/**
 * Whether a request's bearer token is one of `tokens`. Digests are compared in constant time,
 * so neither content nor length leaks through timing; every token is compared, so neither does
 * which one matched.
 */
export function bearerMatcher(tokens: readonly string[]): (authorization: string) => boolean {
  const matches = secretMatcher(tokens);
  return (authorization) => matches(bearerToken(authorization) ?? '');
}

/** Whether a presented secret is one of `tokens`, in constant time (see bearerMatcher). */
export function secretMatcher(tokens: readonly string[]): (given: string) => boolean {
  const expected = tokens.map((t) => createHash('sha256').update(t).digest());
  return (given) => {
    const digest = createHash('sha256').update(given).digest();
    let ok = false;
    for (const e of expected) ok = timingSafeEqual(digest, e) || ok;
    return given !== '' && ok;
  };
}

/** Authorization: Bearer $ADMIN_TOKEN; with `console`, an operator's console session cookie when no header is sent. */
export function adminAuth(adminToken: string, console?: ConsoleAuth): Middleware<GatewayState> {
  const matches = bearerMatcher([adminToken]);
  return async (ctx, next) => {
    const fromCookie = console && usesCookie(ctx) ? await adminFromCookie(ctx, console) : false;
    if (!fromCookie && !matches(ctx.get('authorization'))) {
      throw new GatewayError(401, 'invalid_request_error', 'Admin endpoints need Authorization: Bearer $ADMIN_TOKEN.', null, 'invalid_admin_token');
    }
    await next();
  };
}
