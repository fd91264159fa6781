import type { BillingStore, TaskCharge } from './billing';

/** A charge waiting for its key's turn, and how to answer it. */
interface Waiting {
  charge: TaskCharge;
  resolve: (outcome: 'charged' | 'already') => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit of task charges, per key. Every charge of one key takes that key's row lock,
 * so a burst of creates on one key would run one statement and one commit after another.
 * Here a key has at most one charge (or batch) in the store at a time; the charges of that key
 * arriving meanwhile wait and then go together, in arrival order, as one statement
 * (BillingStore.chargeTasksOfKey). A lone charge goes at once, so batching adds no wait when
 * there is no burst. Keys never wait for each other.
 */
export class ChargeQueue {
  /** Keys with a charge in the store, and the charges that arrived for them since. */
  private readonly waiting = new Map<string, Waiting[]>();

  constructor(
    private readonly billing: BillingStore,
    /** Charges per statement at most, so one statement stays small whatever the burst. */
    private readonly maxBatch = 100,
  ) {}

  /** Charges one task: resolves like chargeTask, or rejects with its refusal (402 / 429 cause). */
  charge(charge: TaskCharge): Promise<'charged' | 'already'> {
    return new Promise((resolve, reject) => {
      const entry: Waiting = { charge, resolve, reject };
      const queue = this.waiting.get(charge.keyId);
      if (queue) {
        queue.push(entry);
        return;
      }
      this.waiting.set(charge.keyId, []);
      void this.drain(charge.keyId, [entry]);
    });
  }

  private async drain(keyId: string, first: Waiting[]): Promise<void> {
    let batch = first;
    while (batch.length > 0) {
      await this.execute(batch);
      batch = this.waiting.get(keyId)?.splice(0, this.maxBatch) ?? [];
    }
    this.waiting.delete(keyId);
  }

  private async execute(batch: readonly Waiting[]): Promise<void> {
    try {
      const outcomes = await this.billing.chargeTasksOfKey(batch.map((w) => w.charge));
      batch.forEach((w, i) => {
        const outcome = outcomes[i];
        if (outcome === 'charged' || outcome === 'already') w.resolve(outcome);
        else w.reject(outcome ?? new Error('no outcome for a charge of the batch'));
      });
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }
}
