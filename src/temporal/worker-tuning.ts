/**
 * The worker's slots, cache and sticky queue, from the environment. Pure, so the relations
 * between them are tested without a worker (test/unit/worker-tuning.test.ts).
 */
import type { WorkerOptions } from '@temporalio/worker';
import type { Env } from '../config/env';

/** Workflow tasks one worker runs at once. */
const WORKFLOW_TASK_SLOTS = 100;

export type WorkerTuning = Required<
  Pick<
    WorkerOptions,
    | 'maxConcurrentActivityTaskExecutions'
    | 'maxConcurrentLocalActivityExecutions'
    | 'maxConcurrentWorkflowTaskExecutions'
    | 'maxCachedWorkflows'
    | 'stickyQueueScheduleToStartTimeout'
  >
>;

export function workerTuning(env: Pick<Env, 'WORKER_MAX_CONCURRENT_ACTIVITIES' | 'WORKER_MAX_CACHED_WORKFLOWS' | 'WORKER_STICKY_TIMEOUT_MS'>): WorkerTuning {
  // One cached workflow per activity slot unless set: a slot is a task whose job this worker watches.
  const cached = env.WORKER_MAX_CACHED_WORKFLOWS ?? env.WORKER_MAX_CONCURRENT_ACTIVITIES;
  return {
    // Each task in flight holds a slot while its job is watched, sleeping between polls: many
    // may be open at once for little CPU. A key's user-URL fetches hold at most
    // FETCH_MAX_PER_KEY of these slots, each for at most FETCH_TIMEOUT_MS; its steps over that
    // give their slot back at once (a delayed retry).
    maxConcurrentActivityTaskExecutions: env.WORKER_MAX_CONCURRENT_ACTIVITIES,
    maxConcurrentLocalActivityExecutions: 200,
    // The SDK refuses more workflow task slots than cached workflows.
    maxConcurrentWorkflowTaskExecutions: Math.min(WORKFLOW_TASK_SLOTS, cached),
    // Each task in flight stays cached, so its workflow tasks keep to the sticky queue: an
    // evicted one's next workflow task goes to the task queue, behind any backlog of a burst's
    // first workflow tasks there, and replays its history (env.ts).
    maxCachedWorkflows: cached,
    // Temporal's 10 s unless set: what a worker that died left on its sticky queue waits this
    // long, where a longer wait keeps the tasks in flight of a worker far behind a burst of
    // creates out of the burst's backlog on the task queue (operations.md).
    stickyQueueScheduleToStartTimeout: env.WORKER_STICKY_TIMEOUT_MS,
  };
}
