/**
 * Where a wave's workflow tasks wait, from Temporal's own metrics: the worker's (the SDK's, at
 * TEMPORAL_METRICS_ADDRESS) and the dev server's (`--metrics-port`). A completion lag or a first
 * workflow task's wait says how long; these say whether the worker (its workflow task slots
 * full) or the server (its one history shard, whose persistence operations queue for it) held
 * the task, and whether a task found a poll waiting for it or sat in a backlog.
 */
import { scrape, sumOf, type Sample } from '../test/support/prometheus';
import { percentile } from './video-load';

/** How often the worker's workflow task slots are sampled through a wave. */
export const SLOT_SAMPLE_MS = 5000;

export interface TemporalReading {
  worker: Sample[];
  server: Sample[];
}

/** How many of something between two readings, and their mean duration. */
export interface CountAndMean {
  count: number;
  meanMs: number;
}

export interface TemporalWaits {
  /** The worker's workflow task slots in use, sampled through the wave. */
  slotsUsed: { p50: number; max: number; of: number; samples: number };
  /** The worker's workflow task polls: how many returned, and their mean round trip. */
  polls: CountAndMean;
  /** The server's history shard: persistence operations and their mean wait for the shard. */
  shardOps: CountAndMean;
  /** Workflow tasks taken from a backlog (no poll was waiting), by queue: how many, and their mean wait there. */
  backlog: { sticky: CountAndMean; taskQueue: CountAndMean };
  /** Workflow tasks handed at once to a poll that was waiting. */
  matchedAtOnce: number;
}

/** Both pages, or null where either is missing (a gateway built before TEMPORAL_METRICS_ADDRESS). */
export async function readTemporal(workerUrl: string, serverUrl: string): Promise<TemporalReading | null> {
  try {
    return { worker: await scrape(workerUrl), server: await scrape(serverUrl) };
  } catch {
    return null;
  }
}

/** The workflow task slots in use now (null when unreadable), and the worker's number of them. */
export async function workflowSlots(workerUrl: string): Promise<{ used: number; of: number } | null> {
  try {
    const page = await scrape(workerUrl);
    const used = sumOf(page, 'temporal_worker_task_slots_used', { worker_type: 'WorkflowWorker' });
    return { used, of: used + sumOf(page, 'temporal_worker_task_slots_available', { worker_type: 'WorkflowWorker' }) };
  } catch {
    return null;
  }
}

/** Samples the worker's workflow task slots every SLOT_SAMPLE_MS until stopped. */
export function sampleWorkflowSlots(workerUrl: string): { stop: () => Promise<{ used: number[]; of: number }> } {
  const used: number[] = [];
  let of = 0;
  let pending: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    pending = workflowSlots(workerUrl).then((s) => {
      if (!s) return;
      used.push(s.used);
      of = s.of;
    });
  }, SLOT_SAMPLE_MS);
  return {
    stop: async () => {
      clearInterval(timer);
      await pending;
      return { used, of };
    },
  };
}

/** A histogram's count and mean (ms) between two readings, over the samples `where` selects. */
function histogramBetween(before: Sample[], after: Sample[], name: string, where: (s: Sample) => boolean): CountAndMean {
  const total = (page: Sample[], suffix: string) => page.filter((s) => s.name === `${name}_${suffix}` && where(s)).reduce((a, s) => a + s.value, 0);
  const count = total(after, 'count') - total(before, 'count');
  const seconds = total(after, 'sum') - total(before, 'sum');
  return { count, meanMs: count > 0 ? (seconds / count) * 1000 : 0 };
}

/** The server's metrics name a task queue with every character other than a letter, digit or `_` as `_`. */
export function serverQueueLabel(taskQueue: string): string {
  return taskQueue.replace(/[^A-Za-z0-9_]/g, '_');
}

export function temporalWaitsBetween(before: TemporalReading, after: TemporalReading, taskQueue: string, slots: { used: number[]; of: number }): TemporalWaits {
  const queue = serverQueueLabel(taskQueue);
  const workflowTasksOf = (s: Sample) => s.labels.task_type === 'Workflow' && s.labels.taskqueue === queue;
  const sticky = (s: Sample) => workflowTasksOf(s) && s.labels.partition === '__sticky__';
  const taskQueueOnly = (s: Sample) => workflowTasksOf(s) && s.labels.partition !== '__sticky__';
  const matchedAtOnce = histogramBetween(before.server, after.server, 'syncmatch_latency', workflowTasksOf).count;
  return {
    slotsUsed: { p50: slots.used.length > 0 ? percentile(slots.used, 50) : 0, max: Math.max(0, ...slots.used), of: slots.of, samples: slots.used.length },
    polls: histogramBetween(before.worker, after.worker, 'temporal_long_request_latency', (s) => s.labels.operation === 'PollWorkflowTaskQueue'),
    shardOps: histogramBetween(
      before.server,
      after.server,
      'semaphore_latency',
      (s) => s.labels.operation === 'ShardInfo' && s.labels.service_name === 'history',
    ),
    backlog: {
      sticky: histogramBetween(before.server, after.server, 'asyncmatch_latency', sticky),
      taskQueue: histogramBetween(before.server, after.server, 'asyncmatch_latency', taskQueueOnly),
    },
    matchedAtOnce,
  };
}

export function formatTemporalWaits(w: TemporalWaits, seconds: number): string {
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  return (
    `workflow task slots used (every ${SLOT_SAMPLE_MS / 1000} s, ${w.slotsUsed.samples} samples): p50 ${w.slotsUsed.p50} max ${w.slotsUsed.max} of ${w.slotsUsed.of}; ` +
    `the worker's workflow task polls ${w.polls.count}, round trip mean ${w.polls.meanMs.toFixed(0)} ms\n` +
    `           dev server: ${(w.shardOps.count / seconds).toFixed(0)} history shard operations/s, mean wait for the shard ${w.shardOps.meanMs.toFixed(0)} ms; ` +
    `workflow tasks handed to a waiting poll ${w.matchedAtOnce}, taken from a backlog: sticky ${w.backlog.sticky.count} after ${s(w.backlog.sticky.meanMs)} (mean), ` +
    `task queue ${w.backlog.taskQueue.count} after ${s(w.backlog.taskQueue.meanMs)}`
  );
}
