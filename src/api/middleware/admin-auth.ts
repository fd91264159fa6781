import { createHash, timingSafeEqual } from 'node:crypto';
import type { Middleware } from 'koa';
import { GatewayError } from '../errors';
import { bearerToken } from './auth';
import type { GatewayState } from '../context';

/** Constant-time comparison of digests, so neither content nor length leaks through timing. */
export function adminAuth(adminToken: string): Middleware<GatewayState> {
  const expected = createHash('sha256').update(adminToken).digest();
  return async (ctx, next) => {
    const given = bearerToken(ctx.get('authorization')) ?? '';
    const digest = createHash('sha256').update(given).digest();
    if (!given || !timingSafeEqual(digest, expected)) {
      throw new GatewayError(401, 'invalid_request_error', 'Admin endpoints need Authorization: Bearer $ADMIN_TOKEN.', null, 'invalid_admin_token');
    }
    await next();
  };
}
