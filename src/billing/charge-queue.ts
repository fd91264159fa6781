import type { BillingStore, TaskCharge } from './ledger';
import { PerKeyBatches } from './per-key-batches';

/**
 * Group commit of task charges, per key (PerKeyBatches): the charges of one key arriving
 * while one of its statements runs go together as the next statement
 * (BillingStore.chargeTasksOfKey), in arrival order.
 */
export class ChargeQueue {
  private readonly batches: PerKeyBatches<TaskCharge, 'charged' | 'already'>;

  constructor(billing: BillingStore, maxBatch = 100) {
    this.batches = new PerKeyBatches<TaskCharge, 'charged' | 'already'>((_keyId, charges) => billing.chargeTasksOfKey(charges), maxBatch);
  }

  /** Charges one task: resolves like chargeTask, or rejects with its refusal (402 / 429 cause). */
  charge(charge: TaskCharge): Promise<'charged' | 'already'> {
    return this.batches.run(charge.keyId, charge);
  }
}
