import type { Logger } from 'pino';
import { LocalRateLimiter, type RateLimiter } from './rate-limiter';

/**
 * Redis when REDIS_URL is set, so every replica draws from one bucket per key; in-process
 * otherwise, which is exact for a single process. Kept apart from rate-limiter.ts so that file
 * does not import the Redis one (which imports it).
 */
export function createRateLimiter(redisUrl: string | undefined, logger: Logger): RateLimiter {
  const url = redisUrl?.trim();
  if (!url) return new LocalRateLimiter();
  logger.info('rate limiter: shared through Redis');
  // Loaded only here: importing ioredis builds its several hundred command methods (about 6 MiB
  // allocated at start-up), which a gateway without REDIS_URL should not pay for.
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a synchronous lazy load, on purpose (above)
  const { RedisRateLimiter } = require('./redis-rate-limiter') as typeof import('./redis-rate-limiter');
  return new RedisRateLimiter(url, logger);
}
