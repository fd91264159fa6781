/** An item waiting for its key's turn, and how to answer it. */
interface Waiting<I, O> {
  item: I;
  resolve: (outcome: O) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit per key. Every write that moves a key's money takes that key's row lock, so a
 * burst on one key would run one statement and one commit after another. Here a key has at
 * most one batch in the store at a time; the items of that key arriving meanwhile wait and then
 * go together, in arrival order, as one statement. A lone item goes at once, so batching adds
 * no wait when there is no burst. Keys never wait for each other.
 */
export class PerKeyBatches<I, O> {
  /** Keys with a batch in the store, and the items that arrived for them since. */
  private readonly waiting = new Map<string, Waiting<I, O>[]>();

  constructor(
    /** Runs one batch of one key; returns one outcome per item, in order (an Error rejects that item). */
    private readonly execute: (keyId: string, items: readonly I[]) => Promise<readonly (O | Error)[]>,
    /** Items per statement at most, so one statement stays small whatever the burst. */
    private readonly maxBatch = 100,
  ) {}

  run(keyId: string, item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      const entry: Waiting<I, O> = { item, resolve, reject };
      const queue = this.waiting.get(keyId);
      if (queue) {
        queue.push(entry);
        return;
      }
      this.waiting.set(keyId, []);
      void this.drain(keyId, [entry]);
    });
  }

  private async drain(keyId: string, first: Waiting<I, O>[]): Promise<void> {
    let batch = first;
    while (batch.length > 0) {
      // One turn of the event loop first: the embedded store runs a statement synchronously, so
      // without it nothing could arrive while a batch runs and every batch would be of one.
      await new Promise((resolve) => setImmediate(resolve));
      batch.push(...(this.waiting.get(keyId)?.splice(0, this.maxBatch - batch.length) ?? []));
      await this.runBatch(keyId, batch);
      batch = this.waiting.get(keyId)?.splice(0, this.maxBatch) ?? [];
    }
    this.waiting.delete(keyId);
  }

  private async runBatch(keyId: string, batch: readonly Waiting<I, O>[]): Promise<void> {
    try {
      const outcomes = await this.execute(
        keyId,
        batch.map((w) => w.item),
      );
      batch.forEach((w, i) => {
        const outcome = outcomes[i];
        if (outcome === undefined) w.reject(new Error('no outcome for an item of the batch'));
        else if (outcome instanceof Error) w.reject(outcome);
        else w.resolve(outcome);
      });
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }
}
