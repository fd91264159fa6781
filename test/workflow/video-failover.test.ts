/**
 * A video task's submit failing over between channels (src/workflows/submit-failover.ts), with
 * scripted activities on a local dev server: surely not accepted on the first channel -> accepted
 * on the next; an outcome that may hide a job -> no failover; a rejection -> failed, no failover;
 * a "not taken" answer after an unknown outcome -> still no failover.
 * Each run's history is a replay fixture (RECORD_HISTORIES=1 saves them; replay.test.ts).
 */
import { ApplicationFailure, defaultPayloadConverter } from '@temporalio/common';
import type { TaskRequest, TaskState } from '../../src/tasks/task';
import { timelineOf } from '../../src/tasks/task-timeline';
import { videoTaskWorkflowV3 } from '../../src/workflows/video-task';
import { SUBMIT_FAILURE_TYPES, type ChannelPlan } from '../../src/workflows/video-task-types';
import { environmentPerFile, fakeActivities, PLAN, recordHistories, rejected, taskRequest, withWorker } from './harness';

const environment = environmentPerFile();

const A: ChannelPlan = { ...PLAN, channel: 'sim-a', upstreamModel: 'model-a', submitAttempts: 3 };
const B: ChannelPlan = { ...PLAN, channel: 'sim-b', upstreamModel: 'model-b', submitAttempts: 3 };

const notAccepted = () => ApplicationFailure.retryable('videos create: HTTP 503: Service Unavailable', SUBMIT_FAILURE_TYPES.notAccepted);
const unknown = () => ApplicationFailure.retryable('videos create: connection failed (UND_ERR_SOCKET)', SUBMIT_FAILURE_TYPES.outcomeUnknown);

/**
 * Runs one task planned on A with B as its fallback; `onA(n)` answers A's n-th submit (B accepts).
 * Returns its final state, the channels submitted to, in order, and its history's timeline.
 */
async function runFailover(shape: string | null, onA: (n: number) => string | Error, options: { a?: ChannelPlan; request?: TaskRequest } = {}) {
  const request = options.request ?? taskRequest();
  const submits: string[] = [];
  const { activities } = fakeActivities({
    async planChannel() {
      return { ...(options.a ?? A), fallbacks: [B] };
    },
    async submitVideo(input) {
      submits.push(input.plan.channel);
      if (input.plan.channel !== 'sim-a') return `job_${input.plan.channel}`;
      const answer = onA(submits.length);
      if (answer instanceof Error) throw answer;
      return answer;
    },
  });
  const { state, runId } = await withWorker(environment(), activities, async (taskQueue) => {
    const handle = await environment().client.workflow.start(videoTaskWorkflowV3, { taskQueue, workflowId: request.taskId, args: [{ request }] });
    const result: TaskState = await handle.result();
    return { state: result, runId: handle.firstExecutionRunId };
  });
  if (shape) await recordHistories(environment(), shape, request.taskId, runId);
  const history = await environment().client.workflow.getHandle(request.taskId).fetchHistory();
  const timeline = timelineOf(history.events ?? [], [], defaultPayloadConverter);
  return { state, submits, timeline };
}

test('a submit the first channel surely did not accept goes to the next channel, and the state shows it', async () => {
  const { state, submits, timeline } = await runFailover('watched-failover', () => notAccepted());
  expect(submits).toEqual(['sim-a', 'sim-a', 'sim-a', 'sim-b']);
  expect(state).toMatchObject({ status: 'completed', upstream: { channel: 'sim-b', jobId: 'job_sim-b' } });
  expect(state.failovers).toEqual([{ from: 'sim-a', to: 'sim-b', reason: 'videos create: HTTP 503: Service Unavailable', at: expect.any(Number) }]);
  const events = timeline.map((e) => e.event);
  expect(events.indexOf('failover')).toBeGreaterThan(-1);
  expect(events.indexOf('failover')).toBeLessThan(events.indexOf('submitted'));
  expect(timeline.find((e) => e.event === 'failover')?.detail).toBe('sim-a -> sim-b: videos create: HTTP 503: Service Unavailable');
}, 60_000);

test('a submit whose outcome is unknown stays on its channel', async () => {
  const { state, submits, timeline } = await runFailover('watched-failover-unknown', (n) => (n === 1 ? unknown() : n === 2 ? notAccepted() : 'job_a'));
  // The first attempt may have made a job: the next ones go to the same channel, retried by the server.
  expect(submits).toEqual(['sim-a', 'sim-a', 'sim-a']);
  expect(state).toMatchObject({ status: 'completed', upstream: { channel: 'sim-a', jobId: 'job_a' } });
  expect(state.failovers).toBeUndefined();
  expect(timeline.map((e) => e.event)).not.toContain('failover');
}, 60_000);

test('a channel that answers "not taken" after an unknown outcome keeps the task: the answer does not prove there is no job', async () => {
  const { state, submits } = await runFailover(null, (n) => (n === 1 ? unknown() : n < 5 ? notAccepted() : 'job_a'));
  expect(submits).toEqual(['sim-a', 'sim-a', 'sim-a', 'sim-a', 'sim-a']);
  expect(state).toMatchObject({ status: 'completed', upstream: { channel: 'sim-a', jobId: 'job_a' } });
  expect(state.failovers).toBeUndefined();
}, 60_000);

test('a submit the provider rejects fails the task, refunded, with no failover', async () => {
  const { state, submits } = await runFailover('watched-failover-rejected', () => rejected('prompt rejected by the provider'));
  expect(submits).toEqual(['sim-a']);
  expect(state).toMatchObject({ status: 'failed', error: { code: 'upstream_rejected', message: 'prompt rejected by the provider' } });
  expect(state.failovers).toBeUndefined();
}, 60_000);

test('a task that makes its own character stays on the channel that holds it', async () => {
  const request = taskRequest({ character: { kind: 'url', url: 'https://example.com/clip.mp4' } });
  const { submits, state } = await runFailover(null, (n) => (n < 5 ? notAccepted() : 'job_a'), { request });
  expect(submits).toEqual(['sim-a', 'sim-a', 'sim-a', 'sim-a', 'sim-a']);
  expect(state).toMatchObject({ status: 'completed', upstream: { channel: 'sim-a' } });
  expect(state.failovers).toBeUndefined();
}, 60_000);
