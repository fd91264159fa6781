/**
 * Starts the API saw succeed, told to the store in batches: the billing reconciler looks for
 * charges whose task never started, and a charge whose start was seen needs no such look, so
 * its first one is put off (billing.deferFirstCheck). A batch lost with a crashed process
 * costs nothing but those looks: the reconciler then checks the tasks as if unconfirmed.
 */
import type { Logger } from 'pino';
import type { BillingStore } from '../billing/ledger';

/** A started task's first reconciler look: long after most tasks have settled on their own. */
export const STARTED_TASK_FIRST_CHECK_SECONDS = 600;

export class StartConfirmations {
  private pending: string[] = [];
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly billing: BillingStore,
    flushMs: number,
    private readonly logger: Logger,
  ) {
    this.timer = setInterval(() => void this.flush(), flushMs);
    this.timer.unref();
  }

  started(taskId: string): void {
    this.pending.push(taskId);
  }

  /** Writes what is pending; one write at a time, so batches never overlap. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.pending.length === 0) return;
      const batch = this.pending;
      this.pending = [];
      try {
        await this.billing.deferFirstCheck(batch, STARTED_TASK_FIRST_CHECK_SECONDS);
      } catch (err) {
        // Harmless: the reconciler looks at these tasks sooner, and finds them running.
        this.logger.warn({ err: (err as Error).message, tasks: batch.length }, 'could not record started tasks; the reconciler will check them');
      }
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
