/**
 * The worker's cache holds every task in flight its activity slots allow, so a task's workflow
 * tasks keep to the sticky queue; the SDK's own default follows the heap (about 2,300 workflows
 * on a 4 GiB heap, about 330 on a 768 MiB one), below the tasks one worker carries.
 */
import { ENV_KEYS, loadConfig } from '../../src/config/env';
import { workerTuning } from '../../src/temporal/worker-tuning';

const env = (extra: Record<string, string> = {}) => loadConfig({ ...extra }).env;

test('by default the cache holds as many workflows as the worker has activity slots for tasks in flight', () => {
  const tuning = workerTuning(env());
  expect(tuning.maxCachedWorkflows).toBe(20_000);
  expect(tuning.maxCachedWorkflows).toBeGreaterThanOrEqual(tuning.maxConcurrentActivityTaskExecutions);
  expect(tuning.maxConcurrentWorkflowTaskExecutions).toBe(100);
  expect(tuning.stickyQueueScheduleToStartTimeout).toBe(10_000);
  expect(workerTuning(env({ WORKER_MAX_CONCURRENT_ACTIVITIES: '5000' })).maxCachedWorkflows).toBe(5_000);
});

test('WORKER_MAX_CACHED_WORKFLOWS sets the cache; the workflow task slots never exceed it (the SDK refuses that)', () => {
  expect(workerTuning(env({ WORKER_MAX_CACHED_WORKFLOWS: '5000' })).maxCachedWorkflows).toBe(5_000);
  const small = workerTuning(env({ WORKER_MAX_CACHED_WORKFLOWS: '40' }));
  expect(small).toMatchObject({ maxCachedWorkflows: 40, maxConcurrentWorkflowTaskExecutions: 40 });
});

test('a cache below 10 or not a number is refused at start', () => {
  expect(() => env({ WORKER_MAX_CACHED_WORKFLOWS: '2' })).toThrow(/WORKER_MAX_CACHED_WORKFLOWS/);
  expect(() => env({ WORKER_MAX_CACHED_WORKFLOWS: 'lots' })).toThrow(/WORKER_MAX_CACHED_WORKFLOWS/);
  expect(ENV_KEYS).toContain('WORKER_MAX_CACHED_WORKFLOWS');
});
