/**
 * One load at a time per key: callers asking for a key while its load is under way share that
 * load's promise. A cache whose entry expires under a burst otherwise sends one identical
 * query per request of the burst (50 key lookups in front of a burst's first charge, measured
 * with bench:video-ab).
 *
 * A change to what is loaded (a revocation, a grant) calls invalidate(): loads under way may
 * have read what was there before it, so later callers do not share them, and each such load
 * learns through `current()` that it must not fill its cache.
 */
export class SingleFlight<V> {
  private readonly loading = new Map<string, Promise<V>>();
  private generation = 0;

  run(key: string, load: (current: () => boolean) => Promise<V>): Promise<V> {
    const pending = this.loading.get(key);
    if (pending) return pending;
    const generation = this.generation;
    const started = load(() => generation === this.generation).finally(() => {
      if (this.loading.get(key) === started) this.loading.delete(key);
    });
    this.loading.set(key, started);
    return started;
  }

  /** What loads read may have changed: loads under way are not shared, nor current, any more. */
  invalidate(): void {
    this.generation += 1;
    this.loading.clear();
  }
}
