import type { BillingStore } from './billing';
import { SingleFlight } from './single-flight';

/**
 * The balance a text request is checked against, without a database read per request: the
 * stored balance, re-read at most every `ttlMs` per key, less what this process has billed
 * since that read and what it has recorded but not yet written. A text answer's price is only
 * known afterwards anyway, so the check is "anything left"; the cost of the cache is that
 * spending by other processes (or a top-up) is seen up to `ttlMs` late.
 */
export class BalanceCache {
  private readonly entries = new Map<string, { balance: number; readAt: number }>();
  /** Reads under way; forget() invalidates them, so a read from before it does not fill the cache. */
  private readonly reads = new SingleFlight<number>();

  constructor(
    private readonly billing: BillingStore,
    private readonly ttlMs: number,
    private readonly maxEntries = 100_000,
  ) {}

  /** The cached balance if it is fresh enough: the hot path, with no promise. */
  fresh(keyId: string): number | undefined {
    const cached = this.entries.get(keyId);
    return cached && Date.now() - cached.readAt < this.ttlMs ? cached.balance : undefined;
  }

  /** Credits left for the key, before its `pending` (recorded, unwritten) usage is taken off. */
  async balance(keyId: string): Promise<number> {
    const fresh = this.fresh(keyId);
    if (fresh !== undefined) return fresh;
    // The entry goes stale for every concurrent request of the key at once: one read serves them.
    return this.reads.run(keyId, async (current) => {
      const now = Date.now();
      const stored = await this.billing.balance(keyId);
      if (current()) {
        if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value ?? '');
        this.entries.set(keyId, { balance: stored?.balance ?? 0, readAt: now });
      }
      return stored?.balance ?? 0;
    });
  }

  /** The balance changed outside usage (a grant): read it afresh next time. */
  forget(keyId: string): void {
    this.entries.delete(keyId);
    // A read under way may have seen the balance before the change: not cached, not shared.
    this.reads.invalidate();
  }

  /** This process wrote `amount` credits of usage for the key: a cached balance follows. */
  billed(keyId: string, amount: number): void {
    const cached = this.entries.get(keyId);
    if (cached) cached.balance -= amount;
  }
}
