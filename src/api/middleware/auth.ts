import type { Middleware, ParameterizedContext } from 'koa';
import type { RateLimiter } from '../../limits/rate-limiter';
import type { ApiKey, KeyStore } from '../../store/keys';
import { AuthenticationError } from '../errors';
import { keyFromCookie, usesCookie, type ConsoleAuth } from '../console/cookie-auth';
import type { GatewayState } from '../context';
import { addressRefused } from './auth-failures';
import { clientAddress } from './client-address';
import { enforceRateLimit } from './rate-limit';

/** Keys of other providers are recognised by prefix so the caller is told why it failed. */
const FOREIGN_PREFIXES = ['sk-ant-', 'sk-proj-', 'sk-svcacct-', 'sk-admin-', 'AIza'];

export function bearerToken(header: string): string | null {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? null;
}

/**
 * The live key for a presented secret, or a 401 saying why not. With a per-address limit of
 * failed authentications (ctx.state.authFailures): an address over it gets a 429 with
 * Retry-After instead of a store lookup, unless the key is one this process recently found
 * valid (a successful client sharing the address is not locked out); every unknown or revoked
 * key counts against the address.
 */
export async function resolveKey(keys: KeyStore, secret: string | null, ctx?: ParameterizedContext<GatewayState>): Promise<ApiKey> {
  if (!secret) {
    throw new AuthenticationError("You didn't provide an API key. Send it as 'Authorization: Bearer <API_KEY>'.");
  }
  if (FOREIGN_PREFIXES.some((p) => secret.startsWith(p))) {
    throw new AuthenticationError('This key was issued by another provider. Use an API key issued by this gateway.');
  }
  const gate = ctx?.state.authFailures;
  // The address is worked out only while some address is blocked, or on a failure.
  const address = gate && ctx ? () => clientAddress(ctx, gate.trustProxy) : null;
  if (gate && address && gate.limit.size > 0) {
    const wait = gate.limit.retryAfterSeconds(address());
    if (wait > 0 && !keys.recentlyValid(secret)) {
      throw addressRefused(gate, wait);
    }
  }
  const key = await keys.authenticate(secret);
  if (!key) {
    if (gate && address) await gate.limit.failed(address());
    throw new AuthenticationError('Incorrect API key provided. Use a key issued by this gateway.');
  }
  return key;
}

/**
 * Authorization: Bearer <key>, for the OpenAI-style endpoint families; with `console`, a
 * console session cookie when the request carries no key header (console/cookie-auth.ts).
 */
export function bearerAuth(keys: KeyStore, limiter: RateLimiter, console?: ConsoleAuth): Middleware<GatewayState> {
  return async (ctx, next) => {
    const fromCookie = console && usesCookie(ctx) ? await keyFromCookie(ctx, console) : null;
    ctx.state.apiKey = fromCookie ?? (await resolveKey(keys, bearerToken(ctx.get('authorization')), ctx));
    const limited = enforceRateLimit(ctx, limiter);
    if (limited) await limited;
    await next();
  };
}

/**
 * x-api-key or Authorization: Bearer (spec 5), for /v1/messages and /v1/models, which
 * Anthropic-style clients call with x-api-key.
 */
export function anyKeyAuth(keys: KeyStore, limiter: RateLimiter, console?: ConsoleAuth): Middleware<GatewayState> {
  return async (ctx, next) => {
    const fromCookie = console && usesCookie(ctx) ? await keyFromCookie(ctx, console) : null;
    if (fromCookie) {
      ctx.state.apiKey = fromCookie;
    } else {
      const xApiKey = ctx.get('x-api-key').trim();
      const secret = xApiKey !== '' ? xApiKey : bearerToken(ctx.get('authorization'));
      if (!secret) {
        throw new AuthenticationError("You didn't provide an API key. Send it as 'x-api-key: <API_KEY>' or 'Authorization: Bearer <API_KEY>'.");
      }
      ctx.state.apiKey = await resolveKey(keys, secret, ctx);
    }
    const limited = enforceRateLimit(ctx, limiter);
    if (limited) await limited;
    await next();
  };
}
