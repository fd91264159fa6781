/**
 * A per-key cap on work in flight in this process. Acquiring never waits: a caller over its
 * key's cap is told at once, so it can give its worker slot back and come again later
 * instead of holding the slot while it queues behind its own key's slow work.
 */
export class PerKeySlots {
  private readonly inFlight = new Map<string, number>();

  constructor(readonly maxPerKey: number) {
    if (!Number.isInteger(maxPerKey) || maxPerKey < 1) throw new RangeError('maxPerKey must be a positive integer');
  }

  /** A release function (idempotent) when the key has a free slot, else null. */
  tryAcquire(key: string): (() => void) | null {
    const held = this.inFlight.get(key) ?? 0;
    if (held >= this.maxPerKey) return null;
    this.inFlight.set(key, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.inFlight.get(key) ?? 1) - 1;
      if (left <= 0) this.inFlight.delete(key);
      else this.inFlight.set(key, left);
    };
  }

  held(key: string): number {
    return this.inFlight.get(key) ?? 0;
  }

  /** Keys holding at least one slot (the map never keeps an idle key). */
  get activeKeys(): number {
    return this.inFlight.size;
  }
}
