import type { RateDecision, RateLimiter } from './rate-limiter';

/** Blocked addresses remembered at once; beyond it the oldest block is dropped (memory stays bounded). */
const DEFAULT_MAX_BLOCKED = 100_000;
/** Buckets of this limiter live beside the keys' request buckets in a shared limiter: a prefix keeps them apart. */
const BUCKET_PREFIX = 'authfail:';

/**
 * Failed key authentications per client address: each failure takes a token from the
 * address's bucket (AUTH_FAILURES_PER_MINUTE a minute, a burst of as many), and a failure
 * that finds the bucket empty blocks the address until the bucket has a token again.
 *
 * Only failures reach the limiter (in Redis when REDIS_URL is set, so replicas share one
 * bucket per address); whether an address is blocked is a synchronous look into this
 * process's own map, free on the hot path while nothing is blocked. A replica learns of a
 * block through its own next failure, which the shared bucket refuses at once.
 */
export class AuthFailureLimit {
  /** Address -> monotonic ms until which it is blocked; in insertion order, so expired ones are at the front. */
  private readonly blocked = new Map<string, number>();

  constructor(
    private readonly limiter: RateLimiter,
    readonly perMinute: number,
    private readonly now: () => number = () => performance.now(),
    private readonly maxBlocked = DEFAULT_MAX_BLOCKED,
  ) {}

  /** Whole seconds until `address` may authenticate again, or 0 when it is not blocked. */
  retryAfterSeconds(address: string): number {
    if (this.blocked.size === 0) return 0;
    const until = this.blocked.get(address);
    if (until === undefined) return 0;
    const left = until - this.now();
    if (left > 0) return Math.max(1, Math.ceil(left / 1000));
    this.blocked.delete(address);
    return 0;
  }

  /** Records one failed authentication from `address`. */
  failed(address: string): Promise<void> | void {
    const decision = this.limiter.take(BUCKET_PREFIX + address, this.perMinute);
    if (decision instanceof Promise) return decision.then((d) => this.apply(address, d));
    this.apply(address, decision);
  }

  /** Addresses blocked now; for tests and metrics. */
  get size(): number {
    return this.blocked.size;
  }

  private apply(address: string, decision: RateDecision): void {
    if (decision.allowed) return;
    const now = this.now();
    this.sweep(now);
    this.blocked.delete(address);
    if (this.blocked.size >= this.maxBlocked) {
      const oldest = this.blocked.keys().next();
      if (!oldest.done) this.blocked.delete(oldest.value);
    }
    this.blocked.set(address, now + Math.max(1, decision.retryAfterSeconds) * 1000);
  }

  /** Blocks last about as long as each other, so the expired ones lead the map: stop at the first live one. */
  private sweep(now: number): void {
    for (const [address, until] of this.blocked) {
      if (until > now) break;
      this.blocked.delete(address);
    }
  }
}
