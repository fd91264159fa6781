import type { ParameterizedContext } from 'koa';
import type { RateDecision, RateLimiter } from '../../limits/rate-limiter';
import type { GatewayState } from '../context';
import { RateLimitedError } from '../errors';

/**
 * The key's requests-per-minute limit. Called by the authentication middleware itself, so
 * no endpoint family that takes a key (video, videos, chat, messages, models, characters)
 * can skip it. Answers carry OpenAI's x-ratelimit-* headers so clients can pace themselves
 * (and Anthropic's anthropic-ratelimit-requests-* on /v1/messages);
 * a refusal is a 429 with Retry-After, in the shape of the family's error middleware.
 */
export function enforceRateLimit(ctx: ParameterizedContext<GatewayState>, limiter: RateLimiter): Promise<void> | void {
  const key = ctx.state.apiKey;
  if (!key?.rateLimitRpm) return;
  const decision = limiter.take(key.id, key.rateLimitRpm);
  // In-process limiters answer synchronously: no promise on the hot path.
  if (decision instanceof Promise) return decision.then((d) => apply(ctx, d));
  apply(ctx, decision);
}

/** The decision's x-ratelimit-* headers on the answer, or a 429 carrying them. */
function apply(ctx: ParameterizedContext<GatewayState>, decision: RateDecision): void {
  const limit = String(decision.limit);
  const remaining = String(decision.remaining);
  const reset = `${Math.max(0, Math.ceil(decision.resetSeconds))}s`;
  if (!decision.allowed) {
    throw new RateLimitedError(
      `Rate limit reached: this key may make ${decision.limit} requests per minute. Retry after ${Math.ceil(decision.retryAfterSeconds)} s.`,
      decision.retryAfterSeconds,
      'rate_limit_exceeded',
      { 'x-ratelimit-limit-requests': limit, 'x-ratelimit-remaining-requests': remaining, 'x-ratelimit-reset-requests': reset },
    );
  }
  // Straight onto the Node response: Koa's ctx.set builds several arrays per call, and this
  // runs on every request of a key with a limit (a measurable share of the API's garbage).
  const res = ctx.res;
  res.setHeader('x-ratelimit-limit-requests', limit);
  res.setHeader('x-ratelimit-remaining-requests', remaining);
  res.setHeader('x-ratelimit-reset-requests', reset);
  // Anthropic's names on its endpoints, the reset as an RFC 3339 time, as its SDK users read them.
  if (ctx.path.startsWith('/v1/messages')) {
    res.setHeader('anthropic-ratelimit-requests-limit', limit);
    res.setHeader('anthropic-ratelimit-requests-remaining', remaining);
    res.setHeader(
      'anthropic-ratelimit-requests-reset',
      new Date(Date.now() + Math.max(0, decision.resetSeconds) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    );
  }
}
