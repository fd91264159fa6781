import type { Middleware } from 'koa';
import type { RateLimiter } from '../../limits/rate-limiter';
import type { KeyStore } from '../../store/keys';
import { AuthenticationError } from '../errors';
import type { GatewayState } from '../context';
import { enforceRateLimit } from './rate-limit';

/** Keys of other providers are recognised by prefix so the caller is told why it failed. */
const FOREIGN_PREFIXES = ['sk-ant-', 'sk-proj-', 'sk-svcacct-', 'sk-admin-', 'AIza'];

export function bearerToken(header: string): string | null {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? null;
}

export async function resolveKey(keys: KeyStore, secret: string | null) {
  if (!secret) {
    throw new AuthenticationError("You didn't provide an API key. Send it as 'Authorization: Bearer <API_KEY>'.");
  }
  if (FOREIGN_PREFIXES.some((p) => secret.startsWith(p))) {
    throw new AuthenticationError('This key was issued by another provider. Use an API key issued by this gateway.');
  }
  const key = await keys.authenticate(secret);
  if (!key) throw new AuthenticationError('Incorrect API key provided. Use a key issued by this gateway.');
  return key;
}

/** Authorization: Bearer <key>, for the OpenAI-style endpoint families. */
export function bearerAuth(keys: KeyStore, limiter: RateLimiter): Middleware<GatewayState> {
  return async (ctx, next) => {
    ctx.state.apiKey = await resolveKey(keys, bearerToken(ctx.get('authorization')));
    const limited = enforceRateLimit(ctx, limiter);
    if (limited) await limited;
    await next();
  };
}

/**
 * x-api-key or Authorization: Bearer (spec 5), for /v1/messages and /v1/models, which
 * Anthropic-style clients call with x-api-key.
 */
export function anyKeyAuth(keys: KeyStore, limiter: RateLimiter): Middleware<GatewayState> {
  return async (ctx, next) => {
    const xApiKey = ctx.get('x-api-key').trim();
    const secret = xApiKey !== '' ? xApiKey : bearerToken(ctx.get('authorization'));
    if (!secret) {
      throw new AuthenticationError("You didn't provide an API key. Send it as 'x-api-key: <API_KEY>' or 'Authorization: Bearer <API_KEY>'.");
    }
    ctx.state.apiKey = await resolveKey(keys, secret);
    const limited = enforceRateLimit(ctx, limiter);
    if (limited) await limited;
    await next();
  };
}
