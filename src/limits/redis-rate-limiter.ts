import { createHash } from 'node:crypto';
import Redis from 'ioredis';
import type { Logger } from 'pino';
import { assertRpm, decide, LocalRateLimiter, WINDOW_MS, type RateDecision, type RateLimiter } from './rate-limiter';

/**
 * The token bucket of rate-limiter.ts (stepBucket + decide), in Lua so that read, refill, spend and
 * write happen atomically in Redis: two replicas taking from one key can never both spend its last
 * token. The clock is Redis's own TIME, so replicas whose clocks disagree still see one timeline.
 *
 * KEYS[1] the bucket; ARGV[1] rpm; ARGV[2] the key's TTL in ms.
 * Returns { allowed (0|1), level (units, see WINDOW_MS) }; the caller derives the rest with decide().
 * All numbers stay integers below 1e14, so Lua's doubles and its 14-digit printing are exact.
 */
const TAKE_SCRIPT = `
-- Redis < 5 refuses writes after a non-deterministic command (TIME) unless effects are replicated;
-- on 5+ this is the default and the call is a no-op.
if redis.replicate_commands then pcall(redis.replicate_commands) end
local window = ${WINDOW_MS}
local rpm = tonumber(ARGV[1])
local capacity = rpm * window
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'level', 'ms')
local level = tonumber(state[1])
local last = tonumber(state[2])
if level == nil or last == nil then
  level = capacity
  last = now
end
local elapsed = now - last
if elapsed < 0 then elapsed = 0 end
if elapsed > window then elapsed = window end
level = math.min(capacity, level + elapsed * rpm)
local allowed = 0
if level >= window then
  level = level - window
  allowed = 1
end
redis.call('HSET', KEYS[1], 'level', level, 'ms', now)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return { allowed, level }
`;
const TAKE_SHA = createHash('sha1').update(TAKE_SCRIPT).digest('hex');

/** An idle bucket is full after one window, i.e. the same as no key; two windows leaves margin. */
const KEY_TTL_MS = 2 * WINDOW_MS;
/** A rate check must never hold up a request for long: past this, the call fails open. */
const COMMAND_TIMEOUT_MS = 500;
/**
 * After a failure, skip Redis for this long. A disconnected client fails instantly anyway, but a
 * stalled server would otherwise add the full command timeout to every request.
 */
const BYPASS_MS = 2_000;
/** A Redis outage must not flood the log with one warning per request. */
const WARN_EVERY_MS = 30_000;

export interface RedisRateLimiterOptions {
  /** Key prefix; the bucket for a key is `${prefix}${keyId}`. */
  prefix?: string;
  commandTimeoutMs?: number;
}

/**
 * Per-key token buckets shared by every process pointed at one Redis.
 *
 * It fails open: when Redis is down, slow or answers nonsense, the call is decided by an in-process
 * LocalRateLimiter instead (so each process still enforces the limit on its own traffic), and a
 * warning is logged at most once per WARN_EVERY_MS. Availability of the gateway beats exactness of
 * the limit during an outage. No command waits for a connection: the offline queue is off, so a
 * call while disconnected fails at once, and a connected but stalled server is cut off by the
 * command timeout.
 */
export class RedisRateLimiter implements RateLimiter {
  readonly kind = 'redis' as const;
  private readonly client: Redis;
  private readonly fallback = new LocalRateLimiter();
  private readonly prefix: string;
  private bypassUntil = 0;
  private lastWarnAt = -Infinity;
  private suppressed = 0;

  constructor(
    redisUrl: string,
    private readonly logger: Logger,
    options: RedisRateLimiterOptions = {},
  ) {
    this.prefix = options.prefix ?? 'gw:rl:';
    this.client = new Redis(redisUrl, {
      commandTimeout: options.commandTimeoutMs ?? COMMAND_TIMEOUT_MS,
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      connectTimeout: 2_000,
      // Closing a client whose socket already died leaves ioredis's "force destroy" timer running
      // for this long, holding process exit; the default 2 s is needlessly slow at shutdown.
      disconnectTimeout: 200,
      // Keep reconnecting in the background (capped backoff); calls fall back locally meanwhile.
      retryStrategy: (times) => Math.min(times * 200, 5_000),
    });
    // Without a listener ioredis prints every connection error to stderr itself.
    this.client.on('error', (err: Error) => this.warn(err));
  }

  async take(keyId: string, rpm: number): Promise<RateDecision> {
    assertRpm(rpm);
    if (Date.now() < this.bypassUntil) return this.fallback.take(keyId, rpm);
    try {
      const { allowed, level } = await this.run(this.prefix + keyId, rpm);
      return decide(level, allowed, rpm);
    } catch (err) {
      this.bypassUntil = Date.now() + BYPASS_MS;
      this.warn(err);
      return this.fallback.take(keyId, rpm);
    }
  }

  /**
   * Resolves true once connected (false after `timeoutMs`). Never needed for correctness, since
   * calls before then fail open, but lets startup code and tests wait for the shared bucket.
   */
  async ready(timeoutMs = 2_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.client.status !== 'ready') {
      if (Date.now() >= deadline || this.client.status === 'end') return false;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    this.bypassUntil = 0;
    return true;
  }

  async close(): Promise<void> {
    await this.fallback.close();
    if (this.client.status === 'ready') {
      // QUIT lets in-flight replies arrive; disconnect if even that fails.
      await this.client.quit().catch(() => this.client.disconnect());
    } else {
      this.client.disconnect();
    }
  }

  /** EVALSHA, loading the script with EVAL when this Redis has not seen it yet (or was restarted). */
  private async run(key: string, rpm: number): Promise<{ allowed: boolean; level: number }> {
    let reply: unknown;
    try {
      reply = await this.client.evalsha(TAKE_SHA, 1, key, rpm, KEY_TTL_MS);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      reply = await this.client.eval(TAKE_SCRIPT, 1, key, rpm, KEY_TTL_MS);
    }
    return parseReply(reply);
  }

  private warn(err: unknown): void {
    const now = Date.now();
    if (now - this.lastWarnAt < WARN_EVERY_MS) {
      this.suppressed++;
      return;
    }
    this.lastWarnAt = now;
    const suppressed = this.suppressed;
    this.suppressed = 0;
    // Only the message: ioredis errors can carry the command and its arguments (key ids).
    const error = err instanceof Error ? err.message : String(err);
    this.logger.warn({ error, suppressed }, 'rate limiter: Redis unavailable, limiting in-process');
  }
}

function parseReply(reply: unknown): { allowed: boolean; level: number } {
  if (Array.isArray(reply) && reply.length === 2) {
    const [allowed, level] = reply as unknown[];
    if ((allowed === 0 || allowed === 1) && typeof level === 'number' && Number.isSafeInteger(level) && level >= 0) {
      return { allowed: allowed === 1, level };
    }
  }
  throw new Error('unexpected rate limit script reply');
}
