/**
 * `npm start`'s in-process worker, supervised. The SDK's worker retries its polls forever
 * while Temporal is away, so after a dev server restart it normally resumes by itself; this
 * makes sure of it instead of trusting it:
 *
 * - a worker whose run() fails (a fatal SDK error) or ends without being asked to is replaced
 *   by a new one, under a RestartBudget;
 * - after a Temporal restart, verifyPolling() waits until the server has seen a poll from this
 *   worker's identity on the task queue (workflow and activity polls); a worker that does not
 *   poll by then is replaced, and one that still does not is given up on.
 *
 * Giving up calls onGiveUp: the process is expected to exit non-zero so that the supervisor
 * above it restarts the whole gateway.
 */
import type { Logger } from 'pino';
import { RestartBudget, type RestartPolicy } from './restart-budget';

/** The part of the SDK's Worker this needs (a seam for the unit tests). */
export interface SupervisableWorker {
  run(): Promise<void>;
  shutdown(): void;
  getState(): string;
  readonly options: { identity: string };
}

export interface WorkerSupervisorOptions<W extends SupervisableWorker> {
  create: () => Promise<W>;
  /** Whether the Temporal server has seen polls from this identity since `sinceMs`. */
  isPolling: (identity: string, sinceMs: number) => Promise<boolean>;
  policy: RestartPolicy;
  logger: Logger;
  onGiveUp: (err: Error) => void;
  /** How long a worker may take to poll again after a Temporal restart (default POLL_CHECK_MS). */
  pollCheckMs?: number;
  pollCheckEveryMs?: number;
}

/**
 * After a Temporal restart the SDK's poll retries back off to at most 10 s between attempts,
 * so a healthy worker is seen polling well within this.
 */
export const POLL_CHECK_MS = 60_000;
/** How long a replaced worker may take to shut down before it is left behind. */
const RETIRE_MS = 30_000;

export class WorkerSupervisor<W extends SupervisableWorker> {
  private current: { worker: W; run: Promise<void> } | null = null;
  private readonly budget: RestartBudget;
  private stopping = false;
  private failed = false;
  /** Replacements and checks run one at a time. */
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly opts: WorkerSupervisorOptions<W>) {
    this.budget = new RestartBudget(opts.policy);
  }

  /** Creates and runs the first worker; a failure here is a start-up failure (it rejects). */
  async start(): Promise<W> {
    const worker = await this.opts.create();
    this.run(worker);
    return worker;
  }

  running(): boolean {
    return this.current?.worker.getState() === 'RUNNING';
  }

  /** For health reports: ok, replacing, failed or the SDK's state. */
  describe(): string {
    if (this.failed) return 'failed';
    const state = this.current?.worker.getState();
    return state === 'RUNNING' ? 'ok' : (state?.toLowerCase() ?? 'starting');
  }

  /** After a Temporal restart: the worker must be seen polling again, or it is replaced. */
  verifyPolling(): Promise<void> {
    return this.serially(async () => {
      const since = Date.now();
      if (await this.seenPolling(since)) {
        this.opts.logger.info('the worker polls the task queue again');
        return;
      }
      this.opts.logger.error({ waitedMs: this.pollCheckMs }, 'the worker does not poll the task queue after the Temporal restart; replacing it');
      if (!(await this.replace(new Error('the worker did not poll after a Temporal restart')))) return;
      const again = Date.now();
      if (await this.seenPolling(again)) {
        this.opts.logger.info('the replacement worker polls the task queue');
        return;
      }
      this.giveUp(new Error(`the worker does not poll the task queue ${Math.round(this.pollCheckMs / 1000)} s after it was replaced`));
    });
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.chain;
    const current = this.current;
    if (!current) return;
    if (current.worker.getState() === 'RUNNING') current.worker.shutdown();
    await current.run.catch(() => undefined);
  }

  private get pollCheckMs(): number {
    return this.opts.pollCheckMs ?? POLL_CHECK_MS;
  }

  private run(worker: W): void {
    const run = worker.run();
    const entry = { worker, run };
    this.current = entry;
    run.then(
      () => this.ended(entry, new Error('the worker stopped without being asked to')),
      (err: unknown) => this.ended(entry, err instanceof Error ? err : new Error(String(err))),
    );
  }

  private ended(entry: { worker: W }, err: Error): void {
    if (this.stopping || this.current?.worker !== entry.worker) return;
    this.opts.logger.fatal({ err: err.message }, 'worker failed; replacing it');
    void this.serially(async () => {
      if (this.current?.worker === entry.worker) await this.replace(err);
    });
  }

  /** Retires the current worker and starts a new one, within the budget; false when given up. */
  private async replace(reason: Error): Promise<boolean> {
    await this.retire();
    for (;;) {
      if (this.stopping) return false;
      const decision = this.budget.next();
      if (!decision.restart) {
        this.giveUp(
          new Error(`${reason.message}; the worker was replaced ${decision.restartsInWindow} times within ${Math.round(this.opts.policy.windowMs / 1000)} s`),
        );
        return false;
      }
      await new Promise((r) => setTimeout(r, decision.delayMs));
      if (this.stopping) return false;
      try {
        const worker = await this.opts.create();
        if (this.stopping) {
          await worker.run().catch(() => undefined);
          return false;
        }
        this.run(worker);
        this.opts.logger.warn({ attempt: decision.attempt, of: this.opts.policy.maxRestarts }, 'worker replaced');
        return true;
      } catch (err) {
        this.opts.logger.error({ attempt: decision.attempt, err: (err as Error).message }, 'could not create a replacement worker');
      }
    }
  }

  private async retire(): Promise<void> {
    const old = this.current;
    this.current = null;
    if (!old) return;
    if (old.worker.getState() === 'RUNNING') {
      try {
        old.worker.shutdown();
      } catch {
        // already shutting down
      }
    }
    const settled = await Promise.race([
      old.run.then(
        () => true,
        () => true,
      ),
      new Promise<false>((r) => setTimeout(() => r(false), RETIRE_MS).unref()),
    ]);
    if (!settled) this.opts.logger.warn('the replaced worker did not shut down in time; left behind');
  }

  private async seenPolling(since: number): Promise<boolean> {
    const identity = this.current?.worker.options.identity;
    if (!identity) return false;
    const deadline = since + this.pollCheckMs;
    const every = this.opts.pollCheckEveryMs ?? 1000;
    while (!this.stopping) {
      try {
        // Margin: the server's clock stamps the poll, this process's clock stamps `since`.
        if (await this.opts.isPolling(identity, since - 2000)) return true;
      } catch {
        // Temporal not answering yet: keep checking until the deadline
      }
      if (Date.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, every));
    }
    return true;
  }

  private giveUp(err: Error): void {
    if (this.failed || this.stopping) return;
    this.failed = true;
    this.opts.onGiveUp(err);
  }

  private serially(op: () => Promise<void>): Promise<void> {
    const next = this.chain.then(op, op);
    this.chain = next.catch(() => undefined);
    return next;
  }
}
