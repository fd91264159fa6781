/**
 * The task charge's edges that a workflow moves (charge-lifecycle.ts draws the lifecycle): the
 * claim before any work, and the settlement when the task ends. Idempotent (each edge is a
 * conditional update that happens once), so Temporal may retry them freely, including after
 * the worker died halfway through.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { EdgeOutcome } from './charge-lifecycle';
import type { BillingStore } from './ledger';
import { FAILURE_TYPES } from '../workflows/video-task-types';

export interface SettleInput {
  taskId: string;
  /** completed: the charge stands; failed or cancelled (DELETE of a running task, or an operator): refunded. */
  outcome: 'completed' | 'failed' | 'cancelled';
  /** Why the task failed, kept as the refund's reason. */
  reason?: string;
  /** The failure's code (TaskError.code), for the metrics; absent in histories recorded before it was sent. */
  code?: string;
}

/** The refund's reason in the ledger. */
export function refundReason(input: SettleInput): string {
  if (input.outcome === 'cancelled') return 'task cancelled before it finished';
  return `task failed: ${input.reason ?? 'no reason recorded'}`.slice(0, 500);
}

/** The task may not run (or complete): its charge is not live. Not retried: the task fails. */
function chargeNotLive(taskId: string, found: EdgeOutcome): ApplicationFailure {
  const why = found === 'missing' ? 'it has no charge' : `its charge was ${found}`;
  return ApplicationFailure.nonRetryable(`The task ${taskId} cannot go on: ${why}. Create it again to have it made.`, FAILURE_TYPES.chargeNotLive);
}

export function createBillingActivities(billing: BillingStore) {
  return {
    /** The claim edge, the workflow's first step: refuses the task unless its charge is live. */
    async claimCharge(input: { taskId: string }): Promise<'claimed'> {
      const found = await billing.claimTask(input.taskId);
      // A retried claim finds its own earlier move.
      if (found === 'moved' || found === 'started' || found === 'completed') return 'claimed';
      throw chargeNotLive(input.taskId, found);
    },

    async settleTask(input: SettleInput): Promise<'completed' | 'refunded' | 'already-settled'> {
      if (input.outcome === 'completed') {
        const found = await billing.completeTask(input.taskId);
        if (found === 'refunded' || found === 'missing') throw chargeNotLive(input.taskId, found);
        return found === 'moved' ? 'completed' : 'already-settled';
      }
      // Once, whoever else refunds it (the reconciler sweeps cancelled runs too): the edge is one conditional update.
      const code = input.outcome === 'cancelled' ? 'cancelled' : (input.code ?? 'failed');
      return (await billing.refundTask(input.taskId, refundReason(input), 'refund', code)) === 'moved' ? 'refunded' : 'already-settled';
    },
  };
}

export type BillingActivities = ReturnType<typeof createBillingActivities>;
