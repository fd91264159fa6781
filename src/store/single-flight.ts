/**
 * One load at a time per key: callers asking for a key while its load is under way share that
 * load's promise. A cache whose entry expires under a burst otherwise sends one identical
 * query per request of the burst (50 key lookups in front of a burst's first charge, measured
 * with bench:video-ab).
 */
export class SingleFlight<V> {
  private readonly loading = new Map<string, Promise<V>>();

  run(key: string, load: () => Promise<V>): Promise<V> {
    const pending = this.loading.get(key);
    if (pending) return pending;
    const started = load().finally(() => {
      if (this.loading.get(key) === started) this.loading.delete(key);
    });
    this.loading.set(key, started);
    return started;
  }

  /** Loads under way are not shared any more: a caller after this starts a fresh one. */
  clear(): void {
    this.loading.clear();
  }
}
