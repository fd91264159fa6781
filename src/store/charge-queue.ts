import type { BillingStore, KeyFunds, TaskCharge } from './billing';

/** A charge waiting for its key's turn, and how to answer it. */
interface Waiting {
  charge: TaskCharge;
  resolve: (outcome: 'charged' | 'already') => void;
  reject: (err: unknown) => void;
}

/** A key's funds as its last charge here left them, and when. */
interface KnownFunds extends KeyFunds {
  at: number;
}

/** How long a key's funds seen by a charge are trusted to say that the next charge will pass. */
export const FUNDS_TRUSTED_MS = 30_000;

/**
 * Group commit of task charges, per key. Every charge of one key takes that key's row lock,
 * so a burst of creates on one key would run one statement and one commit after another.
 * Here a key has at most one charge (or batch) in the store at a time; the charges of that key
 * arriving meanwhile wait and then go together, in arrival order, as one statement
 * (BillingStore.chargeTasksOfKey). A lone charge goes at once, so batching adds no wait when
 * there is no burst. Keys never wait for each other.
 *
 * The queue also remembers what each key had left after its last charge here, less the charges
 * still undecided, so the API can tell a charge that will surely pass (`surelyPasses`) and start
 * its task alongside it instead of after it.
 */
export class ChargeQueue {
  /** Keys with a charge in the store, and the charges that arrived for them since. */
  private readonly waiting = new Map<string, Waiting[]>();
  private readonly known = new Map<string, KnownFunds>();
  /** Per key, the credits and video slots of charges sent here and not yet decided. */
  private readonly undecided = new Map<string, { amount: number; videos: number }>();

  constructor(
    private readonly billing: BillingStore,
    /** Charges per statement at most, so one statement stays small whatever the burst. */
    private readonly maxBatch = 100,
    private readonly maxKnownKeys = 100_000,
  ) {}

  /** Charges one task: resolves like chargeTask, or rejects with its refusal (402 / 429 cause). */
  charge(charge: TaskCharge): Promise<'charged' | 'already'> {
    this.reserve(charge, 1);
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

  /**
   * True when the key's funds seen here within FUNDS_TRUSTED_MS cover this charge on top of
   * every undecided one: it can only fail if something else took the key's credits or slots
   * meanwhile (another API replica, text usage, an operator). Unknown funds: false.
   */
  surelyPasses(charge: TaskCharge, now = Date.now()): boolean {
    const funds = this.known.get(charge.keyId);
    if (!funds || now - funds.at > FUNDS_TRUSTED_MS) return false;
    const undecided = this.undecided.get(charge.keyId) ?? { amount: 0, videos: 0 };
    if (funds.limited && funds.balance - undecided.amount < charge.amount) return false;
    const video = charge.kind === 'video' ? 1 : 0;
    return !(video && funds.maxConcurrentTasks !== null && funds.tasksInFlight + undecided.videos + video > funds.maxConcurrentTasks);
  }

  /** This process billed the key's text usage: what it had left is that much less. */
  spent(keyId: string, amount: number): void {
    const funds = this.known.get(keyId);
    if (funds) funds.balance -= amount;
  }

  /** The key's credits or slots changed outside its charges here (a grant): trust nothing known. */
  forget(keyId: string): void {
    this.known.delete(keyId);
  }

  private reserve(charge: TaskCharge, sign: 1 | -1): void {
    const current = this.undecided.get(charge.keyId) ?? { amount: 0, videos: 0 };
    const next = { amount: current.amount + sign * charge.amount, videos: current.videos + sign * (charge.kind === 'video' ? 1 : 0) };
    if (next.amount === 0 && next.videos === 0) this.undecided.delete(charge.keyId);
    else this.undecided.set(charge.keyId, next);
  }

  private async drain(keyId: string, first: Waiting[]): Promise<void> {
    let batch = first;
    while (batch.length > 0) {
      await this.execute(keyId, batch);
      batch = this.waiting.get(keyId)?.splice(0, this.maxBatch) ?? [];
    }
    this.waiting.delete(keyId);
  }

  private async execute(keyId: string, batch: readonly Waiting[]): Promise<void> {
    let result: Awaited<ReturnType<BillingStore['chargeBatch']>> | undefined;
    let failure: unknown;
    try {
      result = await this.billing.chargeBatch(batch.map((w) => w.charge));
    } catch (err) {
      failure = err;
    }
    // Decided either way: the funds now known include this batch, nothing of it is pending.
    for (const w of batch) this.reserve(w.charge, -1);
    if (result?.funds) this.remember(keyId, result.funds);
    else this.known.delete(keyId);
    batch.forEach((w, i) => {
      const outcome = result?.outcomes[i];
      if (outcome === 'charged' || outcome === 'already') w.resolve(outcome);
      else w.reject(failure ?? outcome ?? new Error('no outcome for a charge of the batch'));
    });
  }

  private remember(keyId: string, funds: KeyFunds): void {
    if (!this.known.has(keyId) && this.known.size >= this.maxKnownKeys) this.known.delete(this.known.keys().next().value ?? '');
    this.known.set(keyId, { ...funds, at: Date.now() });
  }
}
