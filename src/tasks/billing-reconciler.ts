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
 * Temporal no reads, the oldest due charge is always looked at first, and a workflow an
 * operator terminated is settled within about its own age (at most an hour) after it ended.
 */
import type { Logger } from 'pino';
import type { BillingStore } from '../store/billing';
import type { TaskService } from './task-service';


export interface Reconciler {
  /** One pass; resolves with how many charges it settled. */
  runOnce(): Promise<number>;
  stop(): void;
}

export function startBillingReconciler(
  billing: BillingStore,
  tasks: TaskService,
  opts: { intervalSeconds: number; minAgeSeconds: number },
  logger: Logger,
): Reconciler {
  const { intervalSeconds, minAgeSeconds } = opts;
  let running: Promise<number> | null = null;
  const runOnce = (): Promise<number> => {
    running ??= pass().finally(() => (running = null));
    return running;
  };

  async function pass(): Promise<number> {
    let settled = 0;
    const stillRunning: string[] = [];
    for (const task of await billing.chargesDueForCheck(minAgeSeconds)) {
      let outcome;
      try {
        outcome = await tasks.outcome(task.taskId);
      } catch {
        break; // Temporal unreachable: try again next round.
      }
      if (outcome === 'running') stillRunning.push(task.taskId);
      const done =
        outcome === 'missing' ? await billing.refundTask(task.taskId, 'the task never started')
        : outcome === 'failed' ? await billing.refundTask(task.taskId, "the task's workflow ended without finishing")
        : outcome === 'completed' ? await billing.completeTask(task.taskId)
        : false;
      if (done) {
        settled++;
        logger.info({ taskId: task.taskId, outcome }, 'billing reconciler settled a charge');
      }
    }
    await billing.checkAgainLater(stillRunning);
    return settled;
  }

  const timer =
    intervalSeconds > 0
      ? setInterval(() => {
          runOnce().catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'billing reconciliation failed; retrying next round'));
        }, intervalSeconds * 1000)
      : null;
  timer?.unref();
  return { runOnce, stop: () => timer && clearInterval(timer) };
}
