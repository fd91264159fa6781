import { BalanceCache } from '../../src/store/balance-cache';
import type { BillingStore } from '../../src/store/billing';

/** A store whose balance reads the test answers by hand, counting them. */
function fakeStore() {
  const pending: Array<(balance: number) => void> = [];
  const store = {
    reads: 0,
    balance(): Promise<{ limited: boolean; balance: number }> {
      store.reads += 1;
      return new Promise((resolve) => pending.push((balance) => resolve({ limited: true, balance })));
    },
    /** Answers the i-th read still unanswered, counting from the oldest. */
    answer(balance: number, i = 0) {
      pending.splice(i, 1)[0]?.(balance);
    },
  };
  return store;
}

describe('BalanceCache', () => {
  it('serves the concurrent requests of a stale key with one read, then from the cache', async () => {
    const store = fakeStore();
    const cache = new BalanceCache(store as unknown as BillingStore, 60_000);
    const callers = Array.from({ length: 20 }, () => cache.balance('k'));
    expect(store.reads).toBe(1);
    store.answer(500);
    expect(await Promise.all(callers)).toEqual(Array.from({ length: 20 }, () => 500));
    expect(cache.fresh('k')).toBe(500);
    expect(await cache.balance('k')).toBe(500);
    expect(store.reads).toBe(1);
  });

  it('after a grant (forget) during a read, neither caches that read nor shares it', async () => {
    const store = fakeStore();
    const cache = new BalanceCache(store as unknown as BillingStore, 60_000);
    const before = cache.balance('k');
    cache.forget('k');
    const after = cache.balance('k');
    expect(store.reads).toBe(2);
    // The fresh read answers first; the one from before the grant comes back late.
    store.answer(900, 1);
    store.answer(100);
    expect(await before).toBe(100);
    expect(await after).toBe(900);
    expect(cache.fresh('k')).toBe(900);
  });
});
