import { performance } from 'node:perf_hooks';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** seconds until a request would be allowed (0 when allowed) */
  retryAfterSeconds: number;
  /** seconds until the bucket is full again */
  resetSeconds: number;
}

export interface RateLimiter {
  /** A decision, or (in-process limiters) the decision itself without a promise, on the hot path of every request. */
  take(keyId: string, rpm: number): Promise<RateDecision> | RateDecision;
  close(): Promise<void>;
  readonly kind: 'local' | 'redis';
}

/**
 * Token-bucket arithmetic shared by the in-process limiter and (mirrored in Lua) the Redis one.
 *
 * A bucket holds at most `rpm` tokens and refills `rpm` tokens per minute, continuously. To keep
 * every quantity an exact integer, one token is worth WINDOW_MS units and the bucket gains `rpm`
 * units per elapsed millisecond: the capacity is rpm * WINDOW_MS units, and after WINDOW_MS idle
 * milliseconds any bucket is full. Nothing is ever fractional, so there is no float drift across
 * many requests and the Lua copy (doubles, printed with 14 significant digits) stays exact.
 */
export const WINDOW_MS = 60_000;
/** Keeps rpm * WINDOW_MS (6e10) far below both 2^53 and Lua's 14-digit number printing. */
export const RPM_MAX = 1_000_000;

/** Rejects what would make the arithmetic meaningless; a bad limit is a configuration bug, not a 429. */
export function assertRpm(rpm: number): void {
  if (!Number.isSafeInteger(rpm) || rpm < 1 || rpm > RPM_MAX) {
    throw new RangeError(`rpm must be an integer between 1 and ${RPM_MAX}, got ${rpm}`);
  }
}

/** The state after one take: `level` in units (see WINDOW_MS), `allowed` whether a token was spent. */
export interface BucketStep {
  level: number;
  allowed: boolean;
}

/**
 * Refills a bucket last seen at `lastMs` holding `level` units, then spends one token if there is
 * one. Elapsed time is clamped to [0, WINDOW_MS]: a clock that steps backwards grants nothing,
 * and beyond one window the bucket is full anyway (this also bounds elapsed * rpm).
 */
export function stepBucket(level: number, lastMs: number, nowMs: number, rpm: number): BucketStep {
  const capacity = rpm * WINDOW_MS;
  const elapsed = Math.min(WINDOW_MS, Math.max(0, nowMs - lastMs));
  const refilled = Math.min(capacity, level + elapsed * rpm);
  if (refilled >= WINDOW_MS) return { level: refilled - WINDOW_MS, allowed: true };
  return { level: refilled, allowed: false };
}

/**
 * The decision a caller sees for a bucket left at `level` units. Millisecond waits are rounded up
 * to whole seconds, because Retry-After is in seconds and rounding down would invite a retry that
 * is refused again. The divisions are exact enough: both numerators are at most rpm * WINDOW_MS,
 * so every quotient is at most WINDOW_MS and far from double rounding trouble.
 */
export function decide(level: number, allowed: boolean, rpm: number): RateDecision {
  const capacity = rpm * WINDOW_MS;
  const retryMs = allowed ? 0 : Math.ceil((WINDOW_MS - level) / rpm);
  const resetMs = Math.ceil((capacity - level) / rpm);
  return {
    allowed,
    limit: rpm,
    remaining: Math.floor(level / WINDOW_MS),
    retryAfterSeconds: Math.ceil(retryMs / 1000),
    resetSeconds: Math.ceil(resetMs / 1000),
  };
}

interface Bucket {
  level: number;
  lastMs: number;
}

/** Bounded so a flood of distinct keys cannot grow memory without limit. */
const DEFAULT_MAX_BUCKETS = 100_000;

/** A monotonic millisecond clock: wall-clock steps (NTP, manual changes) must not refill or drain buckets. */
function monotonicMs(): number {
  return performance.now();
}

/**
 * Per-key token buckets in this process only: the default, and the Redis limiter's fallback.
 *
 * Memory stays bounded two ways. A bucket untouched for WINDOW_MS is full, which is exactly what a
 * missing bucket means, so idle buckets are dropped with no change in behaviour. The map is kept in
 * last-touched order (delete and re-insert on every take), so the idle ones are always at the front
 * and the sweep stops at the first live one: amortised O(1) per take, no timers. If more than
 * `maxBuckets` keys are live at once, the least recently used bucket is dropped, which at worst
 * hands that key a fresh burst: bounded memory wins over precision in that (unrealistic, since keys
 * are authenticated) case.
 */
export class LocalRateLimiter implements RateLimiter {
  readonly kind = 'local' as const;
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    /** Milliseconds from any fixed origin; injectable for tests. Fractions are floored. */
    private readonly now: () => number = monotonicMs,
    private readonly maxBuckets = DEFAULT_MAX_BUCKETS,
  ) {}

  /** Synchronous: no promise per request (the Redis limiter's take is the async one). */
  take(keyId: string, rpm: number): RateDecision {
    assertRpm(rpm);
    const nowMs = Math.floor(this.now());
    this.sweep(nowMs);
    const bucket = this.buckets.get(keyId);
    // A missing bucket is a full one, last seen "now".
    const step = bucket ? stepBucket(bucket.level, bucket.lastMs, nowMs, rpm) : stepBucket(rpm * WINDOW_MS, nowMs, nowMs, rpm);
    this.buckets.delete(keyId);
    if (this.buckets.size >= this.maxBuckets) this.evictOldest();
    this.buckets.set(keyId, { level: step.level, lastMs: nowMs });
    return decide(step.level, step.allowed, rpm);
  }

  /** Number of buckets held; for tests and metrics. */
  get size(): number {
    return this.buckets.size;
  }

  async close(): Promise<void> {
    this.buckets.clear();
  }

  private sweep(nowMs: number): void {
    for (const [keyId, bucket] of this.buckets) {
      if (nowMs - bucket.lastMs < WINDOW_MS) break;
      this.buckets.delete(keyId);
    }
  }

  private evictOldest(): void {
    const oldest = this.buckets.keys().next();
    if (!oldest.done) this.buckets.delete(oldest.value);
  }
}
