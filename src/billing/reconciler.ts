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
 * one visibility query for runs that closed that way since the last sweep, whose views are
 * dropped and charges refunded. The windows overlap, because visibility records a close a little
 * after it happens; a run handled once is skipped by the sweeps that see it again. A run the
 * sweep misses (closed over an hour before this process started, or beyond a sweep's limit of
 * 500) is still settled at its charge's next due look.
 */
import type { Logger } from 'pino';
import type { BillingStore } from './ledger';
import type { TaskService } from '../tasks/task-service';
import type { TaskViews } from '../tasks/task-views';

/** How far back the first sweep of stopped runs looks, so a restart does not skip recent ones. */
const FIRST_SWEEP_LOOKBACK_MS = 60 * 60_000;
/** Each sweep starts this long before the previous one did: visibility records closes late. */
const SWEEP_OVERLAP_MS = 60_000;
/** Stopped runs read per pass at most; any more are left to their charges' due looks. */
const SWEEP_LIMIT = 500;
/** A run handled this long ago is past every later sweep's window, so it is forgotten. */
const HANDLED_MEMORY_MS = 2 * SWEEP_OVERLAP_MS;
const STOPPED_REASON = "the task's workflow ended without finishing";

export interface Reconciler {
  /** One pass; resolves with how many charges it settled. */
  runOnce(): Promise<number>;
  /** One sweep of the runs stopped from outside; resolves with how many charges it settled. */
  sweepOnce(): Promise<number>;
  stop(): void;
}

export function startBillingReconciler(
  billing: Pick<BillingStore, 'chargesDueForCheck' | 'refundTask' | 'completeTask' | 'checkAgainLater'>,
  tasks: Pick<TaskService, 'outcome' | 'stoppedSince'>,
  /** The task views: those of stopped runs are dropped (nothing will publish to them again), and old ones pruned. */
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
  const sweepOnce = (): Promise<number> => {
    sweeping ??= sweepStopped().finally(() => (sweeping = null));
    return sweeping;
  };

  let sweepFrom = Date.now() - FIRST_SWEEP_LOOKBACK_MS;
  /** Runs this process has handled, by when: the overlapping windows of later sweeps return them again. */
  const handled = new Map<string, number>();

  async function sweepStopped(): Promise<number> {
    const startedAt = Date.now();
    let found: string[];
    try {
      found = await tasks.stoppedSince(new Date(sweepFrom), SWEEP_LIMIT);
    } catch {
      return 0; // Temporal unreachable: the next sweep covers the same window.
    }
    const ids = found.filter((id) => !handled.has(id));
    // Before the refunds: a read from now on asks Temporal, which knows the run was stopped.
    await views.forget(ids);
    let settled = 0;
    for (const taskId of ids) {
      if ((await billing.refundTask(taskId, STOPPED_REASON, 'refund', 'stopped')) === 'moved') {
        settled++;
        logger.info({ taskId }, 'billing reconciler refunded a stopped task');
      }
      handled.set(taskId, startedAt);
    }
    for (const [taskId, at] of handled) {
      if (at >= startedAt - HANDLED_MEMORY_MS) break; // In the order they were handled.
      handled.delete(taskId);
    }
    // Runs past the limit (a mass stop) are left to their charges' due looks.
    sweepFrom = startedAt - SWEEP_OVERLAP_MS;
    return settled;
  }

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
