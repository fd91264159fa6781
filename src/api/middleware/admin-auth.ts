import { createHash, timingSafeEqual } from 'node:crypto';
import type { Middleware, ParameterizedContext } from 'koa';
import { GatewayError } from '../errors';
import { addressRefused } from './auth-failures';
import { bearerToken } from './auth';
import { clientAddress } from './client-address';
import type { GatewayState } from '../context';
import { adminFromCookie, usesCookie, type ConsoleAuth } from '../console/cookie-auth';

/**
 * Whether a presented secret is one of `tokens`. Digests are compared in constant time, so
 * neither content nor length leaks through timing; every token is compared, so neither does
 * which one matched.
 */
export function secretMatcher(tokens: readonly string[]): (given: string) => boolean {
  const expected = tokens.map((t) => createHash('sha256').update(t).digest());
  return (given) => {
    const digest = createHash('sha256').update(given).digest();
    let ok = false;
    for (const e of expected) ok = timingSafeEqual(digest, e) || ok;
    return given !== '' && ok;
  };
}

/**
 * Whether `given` is one of the operator's secrets (`matches`), behind the per-address limit of
 * failed authentications that keys have (ctx.state.authFailures, AUTH_FAILURES_PER_MINUTE): an
 * address over it gets a 429 before any comparison, so a correct guess there is refused too, and
 * every wrong secret counts against it. An absent one (a request with no token) is not a guess.
 */
export async function guardedSecretCheck(ctx: ParameterizedContext<GatewayState>, matches: (given: string) => boolean, given: string): Promise<boolean> {
  const gate = ctx.state.authFailures;
  if (gate && gate.limit.size > 0) {
    const wait = gate.limit.retryAfterSeconds(clientAddress(ctx, gate.trustProxy));
    if (wait > 0) throw addressRefused(gate, wait);
  }
  if (matches(given)) return true;
  if (gate && given !== '') await gate.limit.failed(clientAddress(ctx, gate.trustProxy));
  return false;
}

/** Authorization: Bearer $ADMIN_TOKEN; with `console`, an operator's console session cookie when no header is sent. */
export function adminAuth(adminToken: string, console?: ConsoleAuth): Middleware<GatewayState> {
  const matches = secretMatcher([adminToken]);
  return async (ctx, next) => {
    const fromCookie = console && usesCookie(ctx) ? await adminFromCookie(ctx, console) : false;
    if (!fromCookie && !(await guardedSecretCheck(ctx, matches, bearerToken(ctx.get('authorization')) ?? ''))) {
      throw new GatewayError(401, 'invalid_request_error', 'Admin endpoints need Authorization: Bearer $ADMIN_TOKEN.', null, 'invalid_admin_token');
    }
    await next();
  };
}
