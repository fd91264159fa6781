/**
 * What the dev server itself can do, measured in the same run as the gateway: the ceiling a
 * create rate is read against, and the history a task leaves behind.
 */
import type { Client } from '@temporalio/client';
import { percentile, pool } from './video-load';

/** A task queue no worker polls: its workflows are started and never run. */
const BARE_TASK_QUEUE = 'bench-bare-starts';

export interface BareStarts {
  /** Starts per second. */
  perSecond: number;
  /** The dev server's CPU ms per start, and per termination. */
  startCpuMs: number;
  terminateCpuMs: number;
}

/**
 * Starts n empty workflows (no worker, no memo, no search attributes) with `concurrency`
 * clients and answers the rate: the most workflow starts per second this dev server takes from
 * one client connection, which no gateway create can beat; and what a start and a termination
 * cost the server (`serverCpuMs`: its CPU so far). They are terminated afterwards, so that the
 * waves that follow share the server with nothing.
 */
export async function bareStartRate(temporal: Client, n: number, concurrency: number, serverCpuMs: () => number): Promise<BareStarts> {
  const run = Date.now();
  const ids = Array.from({ length: n }, (_, i) => `bench-bare-${run}-${i}`);
  const cpuBefore = serverCpuMs();
  const startedAt = performance.now();
  await pool(ids, concurrency, async (workflowId) => {
    await temporal.workflow.start('benchBareStart', { taskQueue: BARE_TASK_QUEUE, workflowId, args: [] });
  });
  const perSecond = n / ((performance.now() - startedAt) / 1000);
  const cpuStarted = serverCpuMs();
  await pool(ids, concurrency, async (workflowId) => {
    await temporal.workflow
      .getHandle(workflowId)
      .terminate('bench: bare start measured')
      .catch(() => undefined);
  });
  return { perSecond, startCpuMs: (cpuStarted - cpuBefore) / n, terminateCpuMs: (serverCpuMs() - cpuStarted) / n };
}

export interface HistorySizes {
  sampled: number;
  min: number;
  p50: number;
  max: number;
}

/** History events of up to `sample` finished tasks: constant per task, whatever its number of polls. */
export async function historySizes(temporal: Client, ids: string[], sample: number): Promise<HistorySizes> {
  const step = Math.max(1, Math.floor(ids.length / sample));
  const picked = ids.filter((_, i) => i % step === 0).slice(0, sample);
  const lengths: number[] = [];
  await pool(picked, 10, async (id) => {
    lengths.push((await temporal.workflow.getHandle(id).describe()).historyLength);
  });
  return { sampled: lengths.length, min: Math.min(...lengths), p50: percentile(lengths, 50), max: Math.max(...lengths) };
}
