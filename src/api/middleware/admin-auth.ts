import { createHash, timingSafeEqual } from 'node:crypto';
import type { Middleware } from 'koa';
import { GatewayError } from '../errors';
import { bearerToken } from './auth';
import type { GatewayState } from '../context';

/**
 * Whether a request's bearer token is one of `tokens`. Digests are compared in constant time,
 * so neither content nor length leaks through timing; every token is compared, so neither does
 * which one matched.
 */
export function bearerMatcher(tokens: readonly string[]): (authorization: string) => boolean {
  const expected = tokens.map((t) => createHash('sha256').update(t).digest());
  return (authorization) => {
    const given = bearerToken(authorization) ?? '';
    const digest = createHash('sha256').update(given).digest();
    let ok = false;
    for (const e of expected) ok = timingSafeEqual(digest, e) || ok;
    return given !== '' && ok;
  };
}

export function adminAuth(adminToken: string): Middleware<GatewayState> {
  const matches = bearerMatcher([adminToken]);
  return async (ctx, next) => {
    if (!matches(ctx.get('authorization'))) {
      throw new GatewayError(401, 'invalid_request_error', 'Admin endpoints need Authorization: Bearer $ADMIN_TOKEN.', null, 'invalid_admin_token');
    }
    await next();
  };
}
