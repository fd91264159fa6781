/**
 * Three health answers, for three questions (docs/operations.md, "Health and supervision"):
 *
 * - /livez: is this process alive? The event loop answered; nothing else is touched, so a
 *   slow store or an absent Temporal never makes an orchestrator kill a process that would
 *   recover by itself.
 * - /readyz: should traffic come here? The store answers (every authenticated request needs
 *   it). Temporal and the worker are reported but do not make the process unready: the text
 *   endpoints, files and reads of finished tasks work without them, and creates answer 503 with
 *   Retry-After on their own.
 * - /healthz: is the whole gateway working? 200 only when Temporal answers and a worker polls
 *   the task queue: the detailed report for operators and the tests.
 */
import type { Connection } from '@temporalio/client';
import type { Db } from '../store/db';
import { taskQueuePollers } from '../temporal/pollers';
import { withTimeout } from '../system/with-timeout';

export interface HealthReport {
  ok: boolean;
  temporal: string;
  worker: string;
}

export interface ReadinessReport {
  ready: boolean;
  store: string;
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
/** The store must answer `select 1` within this for the process to be ready. */
const STORE_DEADLINE_MS = 2000;
/** /readyz waits at most this for a fresh Temporal report, then answers with the last one. */
const TEMPORAL_REPORT_WAIT_MS = 500;

const firstLine = (err: unknown) => (err instanceof Error ? err.message : String(err)).split('\n')[0];

/** /healthz is 200 only when Temporal answers and a worker polls the gateway's task queue. */
export function createHealthProbe(opts: HealthProbeOptions): () => Promise<HealthReport> {
  async function probe(): Promise<HealthReport> {
    const { connection } = opts;
    try {
      await connection.withDeadline(Date.now() + 2000, () => connection.workflowService.getSystemInfo({}));
    } catch (err) {
      return { ok: false, temporal: `unreachable: ${firstLine(err)}`, worker: 'unknown' };
    }
    if (opts.localWorkerRunning) {
      const running = opts.localWorkerRunning();
      return { ok: running, temporal: 'ok', worker: running ? 'ok' : 'not running' };
    }
    try {
      const now = Date.now();
      const live = (await taskQueuePollers(connection, opts.namespace, opts.taskQueue, 'workflow')).filter((p) => now - p.lastAccessMs < POLLER_FRESH_MS);
      return live.length > 0
        ? { ok: true, temporal: 'ok', worker: `ok (${live.length} poller${live.length > 1 ? 's' : ''})` }
        : { ok: false, temporal: 'ok', worker: `no worker is polling task queue ${opts.taskQueue}` };
    } catch (err) {
      return { ok: false, temporal: 'ok', worker: `unknown: ${firstLine(err)}` };
    }
  }
  return cached(probe);
}

/** /readyz: ready when the store answers; Temporal's and the worker's state ride along. */
export function createReadinessProbe(opts: { db: Pick<Db, 'query'>; health: () => Promise<HealthReport> }): () => Promise<ReadinessReport> {
  let lastHealth: HealthReport | undefined;
  const store = cached(async () => {
    try {
      await withTimeout(opts.db.query('select 1'), STORE_DEADLINE_MS, 'no answer within 2 s');
      return 'ok';
    } catch (err) {
      return `unreachable: ${firstLine(err)}`;
    }
  });
  return async () => {
    const fresh = opts.health().then((h) => (lastHealth = h));
    fresh.catch(() => undefined);
    const [storeState, health] = await Promise.all([store(), withTimeout(fresh, TEMPORAL_REPORT_WAIT_MS, 'slow').catch(() => lastHealth)]);
    return {
      ready: storeState === 'ok',
      store: storeState,
      temporal: health?.temporal ?? 'checking',
      worker: health?.worker ?? 'checking',
    };
  };
}

/** One probe at a time, its answer reused for CACHE_MS: probes cannot pile up on a slow dependency. */
function cached<T>(probe: () => Promise<T>): () => Promise<T> {
  let last: { settledAt: number | null; report: Promise<T> } | null = null;
  return () => {
    if (!last || (last.settledAt !== null && Date.now() - last.settledAt > CACHE_MS)) {
      const entry: { settledAt: number | null; report: Promise<T> } = { settledAt: null, report: probe() };
      void entry.report.finally(() => (entry.settledAt = Date.now())).catch(() => undefined);
      last = entry;
    }
    return last.report;
  };
}
