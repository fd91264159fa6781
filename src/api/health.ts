import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

export interface HealthReport {
  ok: boolean;
  temporal: string;
  worker: string;
}

export interface HealthProbeOptions {
  connection: Connection;
  namespace: string;
  taskQueue: string;
  /** Set when the worker runs in this process: its own state is the truest answer. */
  localWorkerRunning?: () => boolean;
}

/** A poller is "live" if it polled this recently (long polls last up to about a minute). */
const POLLER_FRESH_MS = 75_000;
const CACHE_MS = 1000;

/** /healthz is 200 only when Temporal answers and a worker polls the gateway's task queue. */
export function createHealthProbe(opts: HealthProbeOptions): () => Promise<HealthReport> {
  let cached: { at: number; report: Promise<HealthReport> } | null = null;

  async function probe(): Promise<HealthReport> {
    const { connection } = opts;
    try {
      await connection.withDeadline(Date.now() + 2000, () => connection.workflowService.getSystemInfo({}));
    } catch (err) {
      return { ok: false, temporal: `unreachable: ${(err as Error).message.split('\n')[0]}`, worker: 'unknown' };
    }
    if (opts.localWorkerRunning) {
      const running = opts.localWorkerRunning();
      return { ok: running, temporal: 'ok', worker: running ? 'ok' : 'not running' };
    }
    try {
      const res = await connection.withDeadline(Date.now() + 2000, () =>
        connection.workflowService.describeTaskQueue({
          namespace: opts.namespace,
          taskQueue: { name: opts.taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
          taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        }),
      );
      const now = Date.now();
      const live = (res.pollers ?? []).filter((p) => {
        const seconds = Number(p.lastAccessTime?.seconds ?? 0);
        return now - seconds * 1000 < POLLER_FRESH_MS;
      });
      return live.length > 0
        ? { ok: true, temporal: 'ok', worker: `ok (${live.length} poller${live.length > 1 ? 's' : ''})` }
        : { ok: false, temporal: 'ok', worker: `no worker is polling task queue ${opts.taskQueue}` };
    } catch (err) {
      return { ok: false, temporal: 'ok', worker: `unknown: ${(err as Error).message.split('\n')[0]}` };
    }
  }

  return () => {
    const now = Date.now();
    if (!cached || now - cached.at > CACHE_MS) cached = { at: now, report: probe() };
    return cached.report;
  };
}
