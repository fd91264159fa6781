/**
 * Settling a paid task's charge when its workflow ends. Idempotent (the billing store's
 * running -> completed/refunded transition happens once), so Temporal may retry it freely,
 * including after the worker died halfway through.
 */
import type { BillingStore } from '../store/billing';

export interface SettleInput {
  taskId: string;
  outcome: 'completed' | 'failed';
  /** Why the task failed, kept as the refund's reason. */
  reason?: string;
}

export function createBillingActivities(billing: BillingStore) {
  return {
    async settleTask(input: SettleInput): Promise<'completed' | 'refunded' | 'already-settled'> {
      if (input.outcome === 'completed') return (await billing.completeTask(input.taskId)) ? 'completed' : 'already-settled';
      const reason = `task failed: ${input.reason ?? 'no reason recorded'}`.slice(0, 500);
      return (await billing.refundTask(input.taskId, reason)) ? 'refunded' : 'already-settled';
    },
  };
}

export type BillingActivities = ReturnType<typeof createBillingActivities>;
