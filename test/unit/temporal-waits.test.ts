/**
 * bench:video's `waits` line: where a wave's workflow tasks waited, from the differences of the
 * worker's and the dev server's Temporal metrics between two readings.
 */
import { serverQueueLabel, temporalWaitsBetween, type TemporalReading } from '../../bench/temporal-waits';
import { parsePrometheus } from '../support/prometheus';

const server = (sticky: [number, number], queue: [number, number], other: [number, number], sync: number, shard: [number, number]) =>
  parsePrometheus(
    [
      `asyncmatch_latency_count{partition="__sticky__",task_type="Workflow",taskqueue="gateway_video"} ${sticky[0]}`,
      `asyncmatch_latency_sum{partition="__sticky__",task_type="Workflow",taskqueue="gateway_video"} ${sticky[1]}`,
      `asyncmatch_latency_count{partition="0",task_type="Workflow",taskqueue="gateway_video"} ${queue[0]}`,
      `asyncmatch_latency_sum{partition="0",task_type="Workflow",taskqueue="gateway_video"} ${queue[1]}`,
      // Another queue's and the activities' matches are not the wave's workflow tasks.
      `asyncmatch_latency_count{partition="0",task_type="Workflow",taskqueue="bench_floor_tasks"} ${other[0]}`,
      `asyncmatch_latency_sum{partition="0",task_type="Workflow",taskqueue="bench_floor_tasks"} ${other[1]}`,
      `asyncmatch_latency_count{partition="0",task_type="Activity",taskqueue="gateway_video"} ${other[0]}`,
      `asyncmatch_latency_sum{partition="0",task_type="Activity",taskqueue="gateway_video"} ${other[1]}`,
      `syncmatch_latency_count{partition="__sticky__",task_type="Workflow",taskqueue="gateway_video"} ${sync}`,
      `syncmatch_latency_sum{partition="__sticky__",task_type="Workflow",taskqueue="gateway_video"} 0.1`,
      `semaphore_latency_count{operation="ShardInfo",service_name="history"} ${shard[0]}`,
      `semaphore_latency_sum{operation="ShardInfo",service_name="history"} ${shard[1]}`,
      `semaphore_latency_count{operation="Other",service_name="history"} 999`,
    ].join('\n'),
  );

const worker = (polls: number, seconds: number) =>
  parsePrometheus(
    [
      `temporal_long_request_latency_count{operation="PollWorkflowTaskQueue",task_queue="gateway-video"} ${polls}`,
      `temporal_long_request_latency_sum{operation="PollWorkflowTaskQueue",task_queue="gateway-video"} ${seconds}`,
      `temporal_long_request_latency_count{operation="PollActivityTaskQueue",task_queue="gateway-video"} 7`,
      `temporal_long_request_latency_sum{operation="PollActivityTaskQueue",task_queue="gateway-video"} 700`,
    ].join('\n'),
  );

test('the server names a task queue with its other characters as underscores', () => {
  expect(serverQueueLabel('gateway-video')).toBe('gateway_video');
  expect(serverQueueLabel('a.b-c_d9')).toBe('a_b_c_d9');
});

test('the waits between two readings: backlogs by queue, matches at once, the shard, the polls and the slots', () => {
  const before: TemporalReading = { server: server([10, 5], [4, 40], [3, 3], 2, [1000, 10]), worker: worker(100, 20) };
  const after: TemporalReading = { server: server([110, 705], [14, 1040], [50, 90], 32, [3000, 1010]), worker: worker(300, 100) };
  const waits = temporalWaitsBetween(before, after, 'gateway-video', { used: [0, 10, 100, 5, 7], of: 100 });
  expect(waits.backlog.sticky).toEqual({ count: 100, meanMs: 7000 });
  expect(waits.backlog.taskQueue).toEqual({ count: 10, meanMs: 100_000 });
  expect(waits.matchedAtOnce).toBe(30);
  expect(waits.shardOps).toEqual({ count: 2000, meanMs: 500 });
  expect(waits.polls).toEqual({ count: 200, meanMs: 400 });
  expect(waits.slotsUsed).toEqual({ p50: 7, max: 100, of: 100, samples: 5 });
});

test('nothing between the readings gives zero counts and means, not NaN', () => {
  const same: TemporalReading = { server: server([1, 1], [1, 1], [1, 1], 1, [1, 1]), worker: worker(1, 1) };
  const waits = temporalWaitsBetween(same, same, 'gateway-video', { used: [], of: 0 });
  expect(waits.backlog.sticky).toEqual({ count: 0, meanMs: 0 });
  expect(waits.polls.meanMs).toBe(0);
  expect(waits.slotsUsed.max).toBe(0);
});
