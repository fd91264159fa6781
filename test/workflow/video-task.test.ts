/**
 * The video task workflow's paths with scripted activities, on a local dev server: completed,
 * remix, failed with a refund, refused when its charge is not live, deadline, continue-as-new.
 * Each run's history is a replay fixture (RECORD_HISTORIES=1 saves them; replay.test.ts).
 */
import type { TaskState } from '../../src/tasks/task';
import { videoTaskWorkflow } from '../../src/workflows/video-task';
import { fakeActivities, PLAN, recordHistories, rejected, environmentPerFile, taskRequest, withWorker, type Activities } from './harness';

const environment = environmentPerFile();

/** Runs one task to its end; its final state, the fakes' calls, and the ids its histories are saved under. */
async function runTask(shape: string, request = taskRequest(), overrides: Partial<Activities> = {}, options: { succeedOnPoll?: number } = {}) {
  const { activities, calls } = fakeActivities(overrides, options);
  const { state, runId } = await withWorker(environment(), activities, async (taskQueue) => {
    const handle = await environment().client.workflow.start(videoTaskWorkflow, { taskQueue, workflowId: request.taskId, args: [{ request }] });
    const result: TaskState = await handle.result();
    return { state: result, runId: handle.firstExecutionRunId };
  });
  await recordHistories(environment(), shape, request.taskId, runId);
  return { state, calls, runId };
}

test('a task is claimed, submitted, polled, stored and completed, with no refund', async () => {
  const { state, calls } = await runTask('video-completed', taskRequest({ enhancePrompt: true }));
  expect(state).toMatchObject({
    status: 'completed',
    progress: 100,
    enhancedPrompt: 'a red fox running through snow, cinematic',
    video: { key: expect.stringMatching(/^videos\//) },
  });
  expect(state.upstream).toEqual({ channel: PLAN.channel, jobId: expect.stringMatching(/^job_/) });
  expect(calls.names[0]).toBe('claimCharge');
  expect(calls.names.filter((n) => n === 'submitVideo')).toHaveLength(1);
  // storeVideo settled the charge itself (chargeSettled): no second settle.
  expect(calls.settled).toEqual([]);
});

test('a remix runs on its source channel and submits a remix, not a new video', async () => {
  const request = taskRequest({
    model: 'motion',
    family: 'motion',
    endpoint: 'videos',
    remixOf: { taskId: 'video_source', channel: 'sim-remix-home', jobId: 'job_source' },
  });
  const { state, calls } = await runTask('video-remix', request);
  expect(state.status).toBe('completed');
  expect(state.upstream?.channel).toBe('sim-remix-home');
  expect(calls.names).toContain('submitRemix');
  expect(calls.names).not.toContain('submitVideo');
});

test('a failed upstream job fails the task with its reason and refunds it once', async () => {
  const { state, calls } = await runTask('video-failed', taskRequest(), {
    async pollVideo() {
      return { phase: 'failed', error: { code: 'content_filtered', message: 'The provider refused the content.' } };
    },
  });
  expect(state).toMatchObject({ status: 'failed', error: { code: 'content_filtered' } });
  expect(calls.settled).toEqual([{ taskId: state.id, outcome: 'failed', reason: 'The provider refused the content.' }]);
});

test('a submit the provider rejects fails the task as upstream_rejected, refunded, and is not retried', async () => {
  const { state, calls } = await runTask('video-rejected', taskRequest(), {
    async submitVideo() {
      throw rejected('prompt rejected by the provider');
    },
  });
  expect(state).toMatchObject({ status: 'failed', error: { code: 'upstream_rejected', message: 'prompt rejected by the provider' } });
  expect(calls.names.filter((n) => n === 'submitVideo')).toHaveLength(1);
  expect(calls.settled.map((s) => s.outcome)).toEqual(['failed']);
});

test('a task whose charge is no longer live does no work: it fails as charge_refunded', async () => {
  const { state, calls } = await runTask('video-charge-refunded', taskRequest(), {
    async claimCharge() {
      throw rejected('its charge was refunded', 'chargeNotLive');
    },
  });
  expect(state).toMatchObject({ status: 'failed', error: { code: 'charge_refunded' } });
  expect(calls.names).not.toContain('planChannel');
  expect(calls.names).not.toContain('submitVideo');
});

test('a task past its deadline fails as timeout and is refunded', async () => {
  const { state, calls } = await runTask('video-deadline', taskRequest({ deadlineMs: 1500 }), {
    async pollVideo() {
      return { phase: 'running', progress: 10 };
    },
  });
  expect(state).toMatchObject({ status: 'failed', error: { code: 'timeout' } });
  expect(calls.settled.map((s) => s.outcome)).toEqual(['failed']);
});

// About 7 history events per poll: 14 polls cross the server's suggestion at 60 events at least once.
test('a long task continues as new, keeps its job and progress, and completes once', async () => {
  const { state, calls, runId } = await runTask('video-continue-as-new', taskRequest(), {}, { succeedOnPoll: 14 });
  expect(state.status).toBe('completed');
  // The chain has more than one run, and the job was submitted once across them.
  const latest = await environment().client.workflow.getHandle(state.id).describe();
  expect(latest.runId).not.toBe(runId);
  expect(calls.names.filter((n) => n === 'submitVideo')).toHaveLength(1);
  expect(calls.names.filter((n) => n === 'claimCharge')).toHaveLength(1);
}, 60_000);
