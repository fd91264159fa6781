/**
 * Settling a paid task's charge when its workflow ends. Idempotent (the billing store's
 * running -> completed/refunded transition happens once), so Temporal may retry it freely,
 * including after the worker died halfway through.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { BillingStore } from '../store/billing';
import { FAILURE_TYPES } from '../workflows/video-task-types';

export interface SettleInput {
  taskId: string;
  outcome: 'completed' | 'failed';
  /** Why the task failed, kept as the refund's reason. */
  reason?: string;
}

export function createBillingActivities(billing: BillingStore) {
  return {
    /**
     * The charge gate of a task started alongside its charge: passes once the charge is in
     * the store; until then it fails and is retried (the workflow's retry policy bounds the
     * wait). A charge already refunded (its create was answered with an error) never passes.
     */
    async awaitCharge(taskId: string): Promise<void> {
      const state = await billing.chargeState(taskId);
      if (state === 'running' || state === 'completed') return;
      if (state === 'refunded') throw ApplicationFailure.nonRetryable('The task\'s charge was refunded before it started.', FAILURE_TYPES.notCharged);
      throw ApplicationFailure.retryable('The task\'s charge is not in the store yet.', 'ChargePending');
    },

    async settleTask(input: SettleInput): Promise<'completed' | 'refunded' | 'already-settled'> {
      if (input.outcome === 'completed') return (await billing.completeTask(input.taskId)) ? 'completed' : 'already-settled';
      const reason = `task failed: ${input.reason ?? 'no reason recorded'}`.slice(0, 500);
      return (await billing.refundTask(input.taskId, reason)) ? 'refunded' : 'already-settled';
    },
  };
}

export type BillingActivities = ReturnType<typeof createBillingActivities>;
