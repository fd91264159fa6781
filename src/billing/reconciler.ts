/**
 * Settles charges whose workflow can no longer settle them itself: a task whose start was
 * lost (the API died between charge and start, or Temporal went away mid-start), or a
 * workflow an operator terminated. Every BILLING_RECONCILE_SECONDS it looks at open charges
 * old enough that no start can still be in flight (`minAgeSeconds`: past the start RPC's
 * deadline, with a margin) and asks Temporal where their workflow stands. Safe to run
 * in every API replica at once: settling is idempotent in the store.
 *
 * It reads only charges that are due: a task whose start the API saw (StartConfirmations)
 * is first looked at after 10 minutes, and a task found running is looked at again after as
 * long as it has lived (1 minute to 1 hour). So healthy tasks, which settle themselves, cost
 * Temporal no reads, and the oldest due charge is always looked at first.
 *
 * A workflow stopped from outside (an operator terminated or cancelled it, or it timed out)
 * is found sooner, by a sweep of its own every `sweepSeconds` (TASK_STOP_SWEEP_SECONDS, a few
 * seconds: a stopped task's view says `processing` until the sweep drops it) and at each pass:
 * visibility queries for runs that closed that way since the last sweep, whose views are
 * dropped and charges refunded (stopped-sweep.ts: a mass stop is read over several sweeps). A
 * run the sweep misses (closed over an hour before this process started) is still settled at
 * its charge's next due look.
 */
import type { Logger } from 'pino';
import type { BillingStore } from './ledger';
import type { TaskService } from '../tasks/task-service';
import type { TaskViews } from '../tasks/task-views';
import { STOPPED_REASON, stoppedRunsSweep } from './stopped-sweep';

export interface Reconciler {
  /** One pass; resolves with how many charges it settled. */
  runOnce(): Promise<number>;
  /** One sweep of the runs stopped from outside; resolves with how many charges it settled. */
  sweepOnce(): Promise<number>;
  stop(): void;
}

export function startBillingReconciler(
  billing: Pick<BillingStore, 'chargesDueForCheck' | 'refundTask' | 'completeTask' | 'checkAgainLater'>,
  tasks: Pick<TaskService, 'outcome' | 'stoppedBetween'>,
  /** The task views: those of stopped runs are dropped (nothing will publish to them again), and old ones (character views too) pruned. */
  views: Pick<TaskViews, 'forget' | 'prune'>,
  opts: { intervalSeconds: number; sweepSeconds: number; minAgeSeconds: number },
  logger: Logger,
): Reconciler {
  const { intervalSeconds, sweepSeconds, minAgeSeconds } = opts;
  let running: Promise<number> | null = null;
  const runOnce = (): Promise<number> => {
    running ??= pass().finally(() => (running = null));
    return running;
  };
  // One sweep at a time, whether the sweep's timer or a pass asked for it.
  let sweeping: Promise<number> | null = null;
  const sweepStopped = stoppedRunsSweep(billing, tasks, views, logger);
  const sweepOnce = (): Promise<number> => {
    sweeping ??= sweepStopped().finally(() => (sweeping = null));
    return sweeping;
  };

  async function pass(): Promise<number> {
    let settled = await sweepOnce();
    await views.prune();
    const stillRunning: string[] = [];
    for (const task of await billing.chargesDueForCheck(minAgeSeconds)) {
      let outcome;
      try {
        outcome = await tasks.outcome(task.taskId);
      } catch {
        break; // Temporal unreachable: try again next round.
      }
      if (outcome === 'running') stillRunning.push(task.taskId);
      // A workflow that does not exist may still be started by a start that was in flight: only
      // a charge never claimed is refunded for it, and a later start is then refused at its claim.
      const moved =
        outcome === 'missing'
          ? await billing.refundTask(task.taskId, 'the task never started', 'refundUnstarted', 'never_started')
          : outcome === 'failed'
            ? await billing.refundTask(task.taskId, STOPPED_REASON, 'refund', 'stopped')
            : outcome === 'completed'
              ? // A background response's workflow settles its hold before it ends: one found open was never settled, so it is released.
                task.kind === 'response'
                ? await billing.refundTask(task.taskId, STOPPED_REASON, 'refund', 'stopped')
                : await billing.completeTask(task.taskId)
              : null;
      if (moved === 'moved') {
        settled++;
        logger.info({ taskId: task.taskId, outcome }, 'billing reconciler settled a charge');
      }
    }
    await billing.checkAgainLater(stillRunning);
    return settled;
  }

  /** Runs `run` every `seconds` (none when 0); a failed round is logged and the next one tries again. */
  const every = (seconds: number, run: () => Promise<number>, failed: string): NodeJS.Timeout | null => {
    if (seconds <= 0) return null;
    const timer = setInterval(() => {
      run().catch((err: unknown) => logger.warn({ err: (err as Error).message }, failed));
    }, seconds * 1000);
    timer.unref();
    return timer;
  };
  const timers = [
    every(intervalSeconds, runOnce, 'billing reconciliation failed; retrying next round'),
    // Off with the reconciler (BILLING_RECONCILE_SECONDS=0), whose part it is.
    every(intervalSeconds > 0 ? sweepSeconds : 0, sweepOnce, 'sweep of stopped tasks failed; retrying next round'),
  ];
  return {
    runOnce,
    sweepOnce,
    stop: () => timers.forEach((t) => t && clearInterval(t)),
  };
}
