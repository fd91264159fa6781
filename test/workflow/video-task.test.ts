/**
 * The video task workflow's paths with scripted activities, on a local dev server: completed,
 * remix, failed with a refund, refused when its charge is not live, deadline, continue-as-new,
 * cancelled (before its claim, during its submit, while its job runs).
 * Each run's history is a replay fixture (RECORD_HISTORIES=1 saves them; replay.test.ts).
 */
import { WorkflowFailedError } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { ApplicationFailure, CancelledFailure, defaultPayloadConverter } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { workflowBundlePath } from '../../src/config/paths';
import type { PollResult } from '../../src/providers/video-upstream';
import { initialState, type TaskRequest, type TaskState } from '../../src/tasks/task';
import { TaskService } from '../../src/tasks/task-service';
import type { TaskLook } from '../../src/tasks/task-views';
import { timelineOf } from '../../src/tasks/task-timeline';
import { FIRST_TASK_PROMPT_MS, videoTaskWorkflow, videoTaskWorkflowV3 } from '../../src/workflows/video-task';
import { SUBMIT_FAILURE_TYPES } from '../../src/workflows/video-task-types';
import { waitFor } from '../support/ports';
import {
  fakeActivities,
  PLAN,
  recordHistories,
  rejected,
  environmentPerFile,
  taskRequest,
  recordingViewSinks,
  viewPublishes,
  withWorker,
  workerOn,
  type Activities,
} from './harness';

const environment = environmentPerFile();

/** Runs one task to its end; its final state, the fakes' calls, and the ids its histories are saved under (`shape` null: not saved). */
async function runTask(shape: string | null, request = taskRequest(), overrides: Partial<Activities> = {}, options: { succeedOnPoll?: number } = {}) {
  const { activities, calls } = fakeActivities(overrides, options);
  const { state, runId } = await withWorker(environment(), activities, async (taskQueue) => {
    // As the API starts it (TaskService.start): no limit on its first workflow task's wait.
    const handle = await environment().client.workflow.start(videoTaskWorkflowV3, {
      taskQueue,
      workflowId: request.taskId,
      args: [{ request, firstTryMaxWaitMs: null }],
    });
    const result: TaskState = await handle.result();
    return { state: result, runId: handle.firstExecutionRunId };
  });
  if (shape) await recordHistories(environment(), shape, request.taskId, runId);
  return { state, calls, runId };
}

test('a task is claimed, submitted, polled, stored and completed, with no refund', async () => {
  const { state, calls } = await runTask('watched-completed', taskRequest({ enhancePrompt: true }));
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

test("each change of a task's state goes to its view through the sink, in order, each with a higher sequence number", async () => {
  const { state } = await runTask(null, taskRequest({ enhancePrompt: true }));
  const published = viewPublishes.get(state.id) ?? [];
  // The enhanced prompt, the upstream job, the stored video: one publish per change, as the memo.
  expect(published.map((p) => [p.state.status, Boolean(p.state.upstream), p.state.enhancedPrompt === state.enhancedPrompt])).toEqual([
    ['pending', false, true],
    ['pending', true, true],
    ['completed', true, true],
  ]);
  expect(published.at(-1)?.state).toEqual(state);
  const seqs = published.map((p) => p.seq);
  expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
  expect(new Set(seqs).size).toBe(seqs.length);
});

test('a remix runs on its source channel and submits a remix, not a new video', async () => {
  const request = taskRequest({
    model: 'motion',
    family: 'motion',
    endpoint: 'videos',
    remixOf: { taskId: 'video_source', channel: 'sim-remix-home', jobId: 'job_source' },
  });
  const { state, calls } = await runTask('watched-remix', request);
  expect(state.status).toBe('completed');
  expect(state.upstream?.channel).toBe('sim-remix-home');
  expect(calls.names).toContain('submitRemix');
  expect(calls.names).not.toContain('submitVideo');
});

test('a failed upstream job fails the task with its reason and refunds it once', async () => {
  const { state, calls } = await runTask('watched-failed', taskRequest(), {
    async pollVideo() {
      return { phase: 'failed', error: { code: 'content_filtered', message: 'The provider refused the content.' } };
    },
  });
  expect(state).toMatchObject({ status: 'failed', error: { code: 'content_filtered' } });
  expect(calls.settled).toEqual([{ taskId: state.id, outcome: 'failed', reason: 'The provider refused the content.', code: 'content_filtered' }]);
});

test('a submit the provider rejects fails the task as upstream_rejected, refunded, and is not retried', async () => {
  const { state, calls } = await runTask('watched-rejected', taskRequest(), {
    async submitVideo() {
      throw rejected('prompt rejected by the provider');
    },
  });
  expect(state).toMatchObject({ status: 'failed', error: { code: 'upstream_rejected', message: 'prompt rejected by the provider' } });
  expect(calls.names.filter((n) => n === 'submitVideo')).toHaveLength(1);
  expect(calls.settled.map((s) => s.outcome)).toEqual(['failed']);
});

test('a task whose charge is no longer live does no work: it fails as charge_refunded', async () => {
  const { state, calls } = await runTask('watched-charge-refunded', taskRequest(), {
    async claimCharge() {
      throw rejected('its charge was refunded', 'chargeNotLive');
    },
  });
  expect(state).toMatchObject({ status: 'failed', error: { code: 'charge_refunded' } });
  expect(calls.names).not.toContain('planChannel');
  expect(calls.names).not.toContain('submitVideo');
});

test('a task past its deadline fails as timeout and is refunded', async () => {
  const { state, calls } = await runTask('watched-deadline', taskRequest({ deadlineMs: 1500 }), {
    async pollVideo() {
      return { phase: 'running', progress: 10 };
    },
  });
  expect(state).toMatchObject({ status: 'failed', error: { code: 'timeout' } });
  expect(calls.settled.map((s) => s.outcome)).toEqual(['failed']);
});

test("a task's history does not grow with its number of polls", async () => {
  const lengthAfter = async (polls: number) => {
    // The long run is the fixture (replay.test.ts); the short one only its yardstick.
    const { state } = await runTask(polls === 40 ? 'watched-40-polls' : null, taskRequest(), {}, { succeedOnPoll: polls });
    expect(state.status).toBe('completed');
    return (await historyOf(state.id)).length;
  };
  const short = await lengthAfter(2);
  const long = await lengthAfter(40);
  expect(long).toBe(short);
  expect(long).toBeLessThanOrEqual(30);
}, 60_000);

test('a task of the current type writes no patch markers and no TemporalChangeVersion upserts, and submits in its first workflow task', async () => {
  const { state } = await runTask('watched-completed-webhook', taskRequest({ callbackUrl: 'https://hooks.example.com/done' }));
  expect(state.status).toBe('completed');
  const events = await historyOf(state.id);
  expect(events.length).toBeLessThanOrEqual(18);
  const markers = events.flatMap((e) => (e.markerRecordedEventAttributes?.markerName ? [e.markerRecordedEventAttributes.markerName] : []));
  // The four local steps (claim, plan, the submit's first attempt, announce), and nothing else.
  expect(markers).toEqual(['core_local_activity', 'core_local_activity', 'core_local_activity', 'core_local_activity']);
  // An accepted first attempt leaves one step for the server to dispatch: the watching step.
  expect(stepsScheduled(events)).toEqual(['watchVideoJob']);
  const upserted = events.flatMap((e) => Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}));
  expect(upserted).toEqual(['GatewayStatus']);
}, 60_000);

test("the watching step's heartbeat timeout follows the job's expected length, past its floor", async () => {
  const timeoutOf = async (expectedJobMs: number) => {
    const { state } = await runTask(null, taskRequest(), {
      planChannel: async (input) => ({ ...PLAN, channel: input.channel ?? PLAN.channel, expectedJobMs }),
    });
    expect(state.status).toBe('completed');
    const watch = (await historyOf(state.id)).find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'watchVideoJob');
    const timeout = watch?.activityTaskScheduledEventAttributes?.heartbeatTimeout;
    return Number(timeout?.seconds ?? 0) * 1000 + Math.round((timeout?.nanos ?? 0) / 1e6);
  };
  // Two poll intervals and 30 s for a short job; a quarter of a 20-minute one.
  expect(await timeoutOf(PLAN.expectedJobMs)).toBe(2 * PLAN.pollMs + 30_000);
  expect(await timeoutOf(20 * 60_000)).toBe(5 * 60_000);
}, 60_000);

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

async function historyOf(taskId: string): Promise<HistoryEvent[]> {
  return (await environment().client.workflow.getHandle(taskId).fetchHistory()).events ?? [];
}

/** The activity types the server dispatched, in order (local steps are markers, not here). */
function stepsScheduled(events: HistoryEvent[]): string[] {
  return events.flatMap((e) => (e.activityTaskScheduledEventAttributes?.activityType?.name ? [e.activityTaskScheduledEventAttributes.activityType.name] : []));
}

/** The timeline's events as the API reads them from a history (no ledger rows). */
function timelineEvents(events: HistoryEvent[]): string[] {
  return timelineOf(events, [], defaultPayloadConverter).map((e) => e.event);
}

test('a submit accepted in the workflow task is on the timeline once, before the file is stored', async () => {
  const { state } = await runTask(null, taskRequest());
  expect(state.status).toBe('completed');
  const events = await historyOf(state.id);
  expect(stepsScheduled(events)).toEqual(['watchVideoJob']);
  expect(timelineEvents(events)).toEqual(['created', 'submitted', 'stored', 'completed']);
}, 60_000);

test('a submit whose first attempt (in the workflow task) fails goes on as a step of its own, retried by the server', async () => {
  let submits = 0;
  const { state } = await runTask('watched-first-try-failed', taskRequest(), {
    async submitVideo(input) {
      if (++submits <= 2) throw ApplicationFailure.retryable('videos create: HTTP 503: Service Unavailable', SUBMIT_FAILURE_TYPES.notAccepted);
      return `job_${input.request.taskId}`;
    },
  });
  expect(state).toMatchObject({ status: 'completed', upstream: { jobId: `job_${state.id}` } });
  // The first attempt in the workflow task, then the step: its first attempt failed, its second was accepted.
  expect(submits).toBe(3);
  const events = await historyOf(state.id);
  expect(stepsScheduled(events)).toEqual(['submitVideo', 'watchVideoJob']);
  // The failed first attempt is no submit: the step's accepted one is.
  expect(timelineEvents(events).filter((e) => e === 'submitted')).toHaveLength(1);
}, 60_000);

/** Starts a V3 task with no worker on its queue, so its first workflow task waits `waitMs`; runs it to its end. */
async function runLateTask(request: TaskRequest, firstTryMaxWaitMs: number | null | undefined, waitMs: number) {
  const { activities } = fakeActivities();
  const taskQueue = `wf-late-${request.taskId.replace(/[^a-z0-9]/gi, '')}`;
  const input = firstTryMaxWaitMs === undefined ? { request } : { request, firstTryMaxWaitMs };
  const handle = await environment().client.workflow.start(videoTaskWorkflowV3, { taskQueue, workflowId: request.taskId, args: [input] });
  await new Promise((resolve) => setTimeout(resolve, waitMs));
  const worker = await workerOn(environment(), activities, taskQueue);
  const state: TaskState = await worker.runUntil(handle.result());
  expect(state.status).toBe('completed');
  return { state, runId: handle.firstExecutionRunId };
}

test('a task whose input has no firstTryMaxWaitMs (as the first V3 runs) submits as a step when its first workflow task waited past FIRST_TASK_PROMPT_MS', async () => {
  const request = taskRequest();
  const { state, runId } = await runLateTask(request, undefined, FIRST_TASK_PROMPT_MS + 500);
  expect(stepsScheduled(await historyOf(state.id))).toEqual(['submitVideo', 'watchVideoJob']);
  await recordHistories(environment(), 'watched-late-first-task', request.taskId, runId);
}, 60_000);

test("a task whose first workflow task waited past its input's limit submits as a step; with no limit it makes its first attempt in that workflow task", async () => {
  const limited = await runLateTask(taskRequest(), 500, 1500);
  expect(stepsScheduled(await historyOf(limited.state.id))).toEqual(['submitVideo', 'watchVideoJob']);
  const request = taskRequest();
  const unlimited = await runLateTask(request, null, FIRST_TASK_PROMPT_MS + 500);
  expect(stepsScheduled(await historyOf(unlimited.state.id))).toEqual(['watchVideoJob']);
  await recordHistories(environment(), 'watched-late-first-task-no-limit', request.taskId, unlimited.runId);
}, 60_000);

test("a task started through TaskService carries the service's limit in its input; within it, the first attempt runs in the first workflow task", async () => {
  const request = taskRequest();
  const { activities } = fakeActivities();
  const state = await withWorker(environment(), activities, async (taskQueue) => {
    const tasks = new TaskService(environment().connection, { namespace: 'default', taskQueue, rpcTimeoutMs: 5000, firstTryMaxWaitMs: 60_000 }, null);
    await tasks.start(request);
    return (await environment().client.workflow.getHandle(request.taskId).result()) as TaskState;
  });
  expect(state.status).toBe('completed');
  const events = await historyOf(state.id);
  const started = events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  expect(started && defaultPayloadConverter.fromPayload(started)).toMatchObject({ request: { taskId: request.taskId }, firstTryMaxWaitMs: 60_000 });
  expect(stepsScheduled(events)).toEqual(['watchVideoJob']);
}, 60_000);

test('a submit that fetches a user URL is a step of its own from its first attempt', async () => {
  const { state } = await runTask('watched-url-images', taskRequest({ images: [{ kind: 'url', url: 'https://example.com/first-frame.png' }] }));
  expect(state.status).toBe('completed');
  expect(stepsScheduled(await historyOf(state.id))).toEqual(['submitVideo', 'watchVideoJob']);
}, 60_000);

/**
 * A task whose polls answer `script(n)` (n from 1) until it says 'hold'; from then on a poll
 * waits for release() and the job succeeds. The task is started as the API starts it (its state
 * in the memo that reads overlay), and `body` watches it through a TaskService.
 */
async function withHeldJob(
  script: (poll: number) => Promise<PollResult | 'hold'>,
  body: (job: { tasks: TaskService; request: TaskRequest; polls: () => number; release: () => void }) => Promise<void>,
): Promise<void> {
  const request = taskRequest();
  let release: () => void = () => undefined;
  const hold = new Promise<void>((resolve) => (release = resolve));
  let polls = 0;
  const { activities } = fakeActivities({
    async pollVideo() {
      const answer = await script(++polls);
      if (answer !== 'hold') return answer;
      await hold;
      return { phase: 'succeeded', download: { url: 'http://upstream.invalid/x.mp4' } };
    },
  });
  await withWorker(environment(), activities, async (taskQueue) => {
    const tasks = new TaskService(environment().connection, { namespace: 'default', taskQueue, rpcTimeoutMs: 5000, firstTryMaxWaitMs: null }, null);
    await tasks.start(request);
    try {
      await body({ tasks, request, polls: () => polls, release });
    } finally {
      // Released however body ended, so a failure is reported rather than waited out.
      release();
    }
  });
}

test('progress reaches status reads through the watching step, with no history event per poll', async () => {
  await withHeldJob(
    async (poll) => (poll < 5 ? { phase: 'running', progress: poll * 10 } : 'hold'),
    async ({ tasks, request, release }) => {
      const handle = environment().client.workflow.getHandle(request.taskId);
      let read: TaskState | null = null;
      for (let i = 0; i < 100 && (read?.progress ?? 0) < 40; i++) {
        await new Promise((r) => setTimeout(r, 100));
        read = await tasks.get(request.taskId, request.ownerId);
      }
      expect(read).toMatchObject({ status: 'processing', progress: 40 });
      expect((await handle.fetchHistory()).events?.length ?? 0).toBeLessThan(20);
      release();
      expect((await handle.result()).status).toBe('completed');
      expect(await tasks.get(request.taskId, request.ownerId)).toMatchObject({ status: 'completed', progress: 100 });
    },
  );
}, 60_000);

test("a fresh view answers reads alone; past its lease the server answers, never below the view's progress; a deletion mark hides the task", async () => {
  await withHeldJob(
    async (poll) => (poll < 3 ? { phase: 'running', progress: poll * 10 } : 'hold'),
    async ({ tasks, request, release }) => {
      await waitFor('a read at 20 %', async () => (await tasks.get(request.taskId, request.ownerId))?.progress === 20, 30_000, 100);
      let look: TaskLook = { deleted: false, view: null };
      const renewed: string[] = [];
      const viewed = new TaskService(
        environment().connection,
        { namespace: 'default', taskQueue: 'unused', rpcTimeoutMs: 5000, firstTryMaxWaitMs: null },
        { look: async () => look, publish: async () => undefined, renewInitial: async (id) => void renewed.push(id) },
      );
      const state = (await tasks.get(request.taskId, request.ownerId))!;
      const at = (progress: number, fresh: boolean): TaskLook => ({ deleted: false, view: { state: { ...state, progress }, fresh } });
      // Fresh: what the view holds, whatever the server says.
      look = at(77, true);
      expect(await viewed.get(request.taskId, request.ownerId)).toMatchObject({ status: 'processing', progress: 77 });
      // A fresh view of a task that is not on this server at all answers the same: no Temporal call.
      expect(await viewed.get('vidgen3:1-nowhere', request.ownerId)).toMatchObject({ progress: 77 });
      // Past its lease: the server's memo and heartbeats, with the view's progress where that is ahead.
      look = at(77, false);
      expect(await viewed.get(request.taskId, request.ownerId)).toMatchObject({ status: 'processing', progress: 77 });
      look = at(5, false);
      expect(await viewed.get(request.taskId, request.ownerId)).toMatchObject({ status: 'processing', progress: 20 });
      expect(await viewed.get('vidgen3:1-nowhere', request.ownerId)).toBeNull();
      // Another key's view reads as no task, and a deleted one is not read at all.
      look = at(77, true);
      expect(await viewed.get(request.taskId, 'key_other')).toBeNull();
      look = { deleted: true, view: at(77, true).view };
      expect(await viewed.get(request.taskId, request.ownerId)).toBeNull();
      // The run has completed workflow tasks: a describe never renews its view's lease.
      expect(renewed).toEqual([]);
      release();
    },
  );
}, 60_000);

/** A task service of a queue no worker polls, for the sweep's visibility queries. */
const serviceOfQueue = (taskQueue: string) =>
  new TaskService(environment().connection, { namespace: 'default', taskQueue, rpcTimeoutMs: 5000, firstTryMaxWaitMs: null }, null);

test("the sweep of stopped runs lists the gateway's own task queue only, not another application's runs in the namespace", async () => {
  const since = new Date(Date.now() - 1000);
  const ours = `ours-${Date.now()}`;
  const tasks = serviceOfQueue(ours);
  const client = environment().client;
  // No worker on either queue: each run waits for its first workflow task until it is stopped.
  const mine = await client.workflow.start('anyWorkflow', { taskQueue: ours, workflowId: `${ours}-task` });
  const theirs = await client.workflow.start('anyWorkflow', { taskQueue: `another-app-${Date.now()}`, workflowId: `${ours}-other-app` });
  await Promise.all([mine.terminate('an operator stopped it'), theirs.terminate('another application stopped its own')]);
  // Visibility records a close a moment after it happens: both closes seen first.
  const bothClosed = `WorkflowId IN ("${mine.workflowId}", "${theirs.workflowId}") AND ExecutionStatus = "Terminated"`;
  await waitFor('both stops seen', async () => (await client.workflow.count(bothClosed)).count === 2, 10_000, 100);
  expect((await tasks.stoppedBetween(since, null, 100)).ids).toEqual([mine.workflowId]);
}, 30_000);

test("the sweep of stopped runs reads them a page at a time, newest close first, each page before the last one's oldest", async () => {
  const since = new Date(Date.now() - 1000);
  const queue = `paged-${Date.now()}`;
  const tasks = serviceOfQueue(queue);
  const client = environment().client;
  const stopped: string[] = [];
  // Stopped one after another, a few milliseconds apart: each close in a millisecond of its own.
  for (let i = 0; i < 5; i++) {
    const run = await client.workflow.start('anyWorkflow', { taskQueue: queue, workflowId: `${queue}-${i}` });
    await run.terminate('an operator stopped it');
    stopped.unshift(run.workflowId);
    await new Promise((r) => setTimeout(r, 5));
  }
  await waitFor(
    'the stops seen',
    async () => (await client.workflow.count(`TaskQueue = "${queue}" AND ExecutionStatus = "Terminated"`)).count === 5,
    10_000,
    100,
  );
  const first = await tasks.stoppedBetween(since, null, 2);
  expect(first).toMatchObject({ ids: stopped.slice(0, 2), more: true });
  expect(first.oldestClose).toEqual((await client.workflow.getHandle(stopped[1]!).describe()).closeTime);
  const second = await tasks.stoppedBetween(since, first.oldestClose, 2);
  expect(second).toMatchObject({ ids: stopped.slice(2, 4), more: true });
  const last = await tasks.stoppedBetween(since, second.oldestClose, 2);
  expect(last).toMatchObject({ ids: stopped.slice(4), more: false });
  // Nothing before the window's start.
  expect(await tasks.stoppedBetween(new Date(), null, 2)).toEqual({ ids: [], oldestClose: null, more: false });
}, 30_000);

test("a run that has completed no workflow task reads as created, and its read renews the initial view's lease", async () => {
  const published: Array<{ state: TaskState; seq: number }> = [];
  const renewed: string[] = [];
  let look: TaskLook = { deleted: false, view: null };
  // No worker polls this queue: the run's first workflow task waits, as behind a burst's backlog.
  const tasks = new TaskService(
    environment().connection,
    { namespace: 'default', taskQueue: `no-worker-${Date.now()}`, rpcTimeoutMs: 5000, firstTryMaxWaitMs: null },
    { look: async () => look, publish: async (state, seq) => void published.push({ state, seq }), renewInitial: async (id) => void renewed.push(id) },
  );
  const request = taskRequest({ taskId: `vidgen3:${Date.now()}-untouched` });
  const created = await tasks.start(request);
  expect(published).toEqual([{ state: created, seq: 0 }]);
  look = { deleted: false, view: { state: created, fresh: false } };
  expect(await tasks.get(request.taskId, request.ownerId)).toEqual(created);
  expect(renewed).toEqual([request.taskId]);
  // A fresh view answers alone: nothing to renew.
  look = { deleted: false, view: { state: created, fresh: true } };
  expect(await tasks.get(request.taskId, request.ownerId)).toEqual(created);
  expect(renewed).toHaveLength(1);
  // No view (its write failed): nothing to renew either.
  look = { deleted: false, view: null };
  expect(await tasks.get(request.taskId, request.ownerId)).toEqual(created);
  expect(renewed).toHaveLength(1);
  await environment().client.workflow.getHandle(request.taskId).terminate('test over');
}, 30_000);

test('a retried watching step resumes from its last heartbeat, so reads never go back', async () => {
  await withHeldJob(
    async (poll) => {
      if (poll <= 3) return { phase: 'running', progress: poll * 10 };
      if (poll === 4) {
        // Long enough for the 30 % heartbeat to reach the server, then the attempt is lost.
        await new Promise((r) => setTimeout(r, 1500));
        throw ApplicationFailure.retryable('the worker went away', 'WorkerLost');
      }
      // The next attempt: the provider now reports less than was shown.
      return poll < 8 ? { phase: 'running', progress: 5 } : 'hold';
    },
    async ({ tasks, request, polls, release }) => {
      await waitFor('the second attempt to poll', async () => polls() >= 8, 30_000, 50);
      await new Promise((r) => setTimeout(r, 1200));
      expect(await tasks.get(request.taskId, request.ownerId)).toMatchObject({ status: 'processing', progress: 30 });
      release();
      expect((await environment().client.workflow.getHandle(request.taskId).result()).status).toBe('completed');
    },
  );
}, 60_000);

test('a task whose watching step has ended reads where its job was last seen until its outcome is published, with no workflow worker', async () => {
  const request = taskRequest();
  let release: () => void = () => undefined;
  const hold = new Promise<void>((resolve) => (release = resolve));
  let polls = 0;
  const { activities } = fakeActivities({
    async pollVideo() {
      if (++polls < 5) return { phase: 'running', progress: polls * 10 };
      await hold;
      return { phase: 'succeeded', download: { url: 'http://upstream.invalid/x.mp4' } };
    },
  });
  const taskQueue = `wf-ended-watch-${request.taskId.replace(/[^a-z0-9]/gi, '')}`;
  // Workflow tasks (and the local steps) in one worker, the watching step in another: the first
  // can stop while the step ends, which holds open the moment between the step's result and the
  // workflow task that publishes it.
  const workflows = () =>
    Worker.create({
      connection: environment().nativeConnection,
      taskQueue,
      workflowBundle: { codePath: workflowBundlePath() },
      activities,
      sinks: recordingViewSinks(),
      enableNonLocalActivities: false,
    });
  const steps = await Worker.create({ connection: environment().nativeConnection, taskQueue, activities, maxHeartbeatThrottleInterval: '1s' });
  const tasks = new TaskService(environment().connection, { namespace: 'default', taskQueue, rpcTimeoutMs: 5000, firstTryMaxWaitMs: null }, null);
  const handle = environment().client.workflow.getHandle(request.taskId);
  await steps.runUntil(async () => {
    try {
      const first = await workflows();
      await first.runUntil(async () => {
        await tasks.start(request);
        await waitFor('a read at 40 %', async () => (await tasks.get(request.taskId, request.ownerId))?.progress === 40, 30_000, 100);
      });
      release();
      await waitFor('the watching step to end', async () => ((await handle.describe()).raw.pendingActivities ?? []).length === 0, 30_000, 100);
      // No worker publishes the step's outcome: reads keep what they showed, not the memo's pending 0 %.
      expect(await tasks.get(request.taskId, request.ownerId)).toMatchObject({ status: 'processing', progress: 40 });
      const second = await workflows();
      await second.runUntil(async () => expect((await handle.result()).status).toBe('completed'));
    } finally {
      release();
    }
  });
  expect(await tasks.get(request.taskId, request.ownerId)).toMatchObject({ status: 'completed', progress: 100 });
}, 90_000);

test('a run continued as new by an earlier version resumes its job and completes', async () => {
  const request = taskRequest();
  const { activities, calls } = fakeActivities();
  const resumedFrom = { ...initialState(request), status: 'processing' as const, progress: 30, upstream: { channel: PLAN.channel, jobId: 'job_before' } };
  const state = await withWorker(environment(), activities, async (taskQueue) => {
    const handle = await environment().client.workflow.start(videoTaskWorkflow, {
      taskQueue,
      workflowId: request.taskId,
      args: [{ request, resume: { state: resumedFrom, plan: PLAN, jobId: 'job_before', submittedAt: Date.now() - 1000 } }],
    });
    return handle.result();
  });
  expect(state).toMatchObject({ status: 'completed', progress: 100, upstream: { jobId: 'job_before' } });
  expect(calls.names).not.toContain('submitVideo');
  expect(calls.names).not.toContain('claimCharge');
}, 60_000);

/**
 * A task cancelled while `step` runs (the API's DELETE of a running task): `hold` is where the
 * step waits until the test has cancelled. The run's end, the fakes' calls and its memo.
 */
async function cancelDuring(shape: string, step: 'submit' | 'watch') {
  const request = taskRequest();
  let entered: () => void = () => undefined;
  const inStep = new Promise<void>((resolve) => (entered = resolve));
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  const { activities, calls } = fakeActivities({
    async submitVideo(input) {
      if (step === 'submit') {
        entered();
        await held;
      }
      return `job_${input.request.taskId}`;
    },
    async pollVideo(): Promise<PollResult> {
      entered();
      return { phase: 'running', progress: 20 };
    },
  });
  const outcome = await withWorker(environment(), activities, async (taskQueue) => {
    const handle = await environment().client.workflow.start(videoTaskWorkflowV3, { taskQueue, workflowId: request.taskId, args: [{ request }] });
    try {
      await inStep;
      await handle.cancel();
      const error: unknown = await handle.result().then(
        () => null,
        (err: unknown) => err,
      );
      const description = await handle.describe();
      return { error, status: description.status.name, memo: description.memo?.state as TaskState, runId: handle.firstExecutionRunId };
    } finally {
      release();
    }
  });
  await recordHistories(environment(), shape, request.taskId, outcome.runId);
  return { ...outcome, calls, request };
}

test('a task cancelled while its job runs is refunded once, its job cancelled, its file removed, and ends as cancelled', async () => {
  const { error, status, memo, calls, request } = await cancelDuring('watched-cancelled', 'watch');
  expect(error).toBeInstanceOf(WorkflowFailedError);
  expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
  expect(status).toBe('CANCELLED');
  expect(calls.settled).toEqual([{ taskId: request.taskId, outcome: 'cancelled' }]);
  // Refunded before the provider is told, and the file removed after both.
  const order = calls.names.filter((n) => ['settleTask', 'cancelUpstreamJob', 'removeStoredVideo'].includes(n));
  expect(order).toEqual(['settleTask', 'cancelUpstreamJob', 'removeStoredVideo']);
  expect(memo).toMatchObject({ status: 'failed', error: { code: 'cancelled' }, upstream: { jobId: `job_${request.taskId}` } });
}, 60_000);

test('a task cancelled during its submit is refunded once and ends as cancelled, with no job to cancel', async () => {
  const { error, status, memo, calls, request } = await cancelDuring('watched-cancelled-submit', 'submit');
  expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
  expect(status).toBe('CANCELLED');
  expect(calls.settled).toEqual([{ taskId: request.taskId, outcome: 'cancelled' }]);
  expect(calls.names).not.toContain('cancelUpstreamJob');
  expect(calls.names).not.toContain('watchVideoJob');
  expect(memo).toMatchObject({ status: 'failed', error: { code: 'cancelled' } });
  expect(memo.upstream).toBeUndefined();
}, 60_000);

test('a task cancelled before its workflow claimed the charge is refunded once and does no work', async () => {
  const request = taskRequest();
  const { activities, calls } = fakeActivities();
  const taskQueue = `wf-unclaimed-${request.taskId.replace(/[^a-z0-9]/gi, '')}`;
  // Started and cancelled with no worker on the queue: the first workflow task sees both at once.
  const handle = await environment().client.workflow.start(videoTaskWorkflowV3, { taskQueue, workflowId: request.taskId, args: [{ request }] });
  await handle.cancel();
  const worker = await workerOn(environment(), activities, taskQueue);
  const error = await worker.runUntil(
    handle.result().then(
      () => null,
      (err: unknown) => err,
    ),
  );
  expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
  expect((await handle.describe()).status.name).toBe('CANCELLED');
  expect(calls.settled).toEqual([{ taskId: request.taskId, outcome: 'cancelled' }]);
  expect(calls.names).not.toContain('claimCharge');
  expect(calls.names).not.toContain('submitVideo');
  await recordHistories(environment(), 'watched-cancelled-unclaimed', request.taskId, handle.firstExecutionRunId);
}, 60_000);

test('a cancelled run goes on to its end when the provider cannot be told', async () => {
  const { activities, calls } = fakeActivities({
    async pollVideo(): Promise<PollResult> {
      return { phase: 'running', progress: 20 };
    },
    async cancelUpstreamJob() {
      throw ApplicationFailure.retryable('the provider is down', 'UpstreamUnavailable');
    },
  });
  const request = taskRequest();
  const status = await withWorker(environment(), activities, async (taskQueue) => {
    const handle = await environment().client.workflow.start(videoTaskWorkflowV3, { taskQueue, workflowId: request.taskId, args: [{ request }] });
    await waitFor('the job to be watched', async () => calls.names.includes('pollVideo'), 10_000, 20);
    await handle.cancel();
    await handle.result().catch(() => undefined);
    return (await handle.describe()).status.name;
  });
  expect(status).toBe('CANCELLED');
  // Its few tries, then on: refunded first all the same.
  expect(calls.names.filter((n) => n === 'cancelUpstreamJob')).toHaveLength(3);
  expect(calls.settled).toEqual([{ taskId: request.taskId, outcome: 'cancelled' }]);
  expect(calls.names).toContain('removeStoredVideo');
}, 60_000);

test('a finished task announces its terminal state once, after publishing it, with its callback_url', async () => {
  const request = taskRequest({ callbackUrl: 'https://hooks.example.com/done' });
  const { state, calls } = await runTask('watched-completed-webhook', request);
  expect(state.status).toBe('completed');
  expect(calls.announced).toHaveLength(1);
  expect(calls.announced[0]).toMatchObject({
    subject: 'video',
    id: request.taskId,
    keyId: request.ownerId,
    callbackUrl: request.callbackUrl,
    outcome: 'completed',
  });
  // The state it carries is the published terminal one (what a status read then shows).
  expect(calls.announced[0]).toMatchObject({ state: { status: 'completed', progress: 100 } });
  expect(calls.names[calls.names.length - 1]).toBe('announceTerminal');
});

test('a failed task announces failed; an announce that fails does not fail the task', async () => {
  const failing = await runTask('watched-failed-webhook', taskRequest(), {
    async pollVideo() {
      return { phase: 'failed', error: { code: 'content_filtered', message: 'The provider refused the content.' } };
    },
  });
  expect(failing.calls.announced.map((a) => a.outcome)).toEqual(['failed']);
  const { state, calls } = await runTask('announce-refused', taskRequest(), {
    async announceTerminal() {
      throw ApplicationFailure.nonRetryable('the store is gone');
    },
  });
  expect(state.status).toBe('completed');
  expect(calls.names.filter((n) => n === 'announceTerminal')).toHaveLength(1);
});

test('a cancelled task announces cancelled after its refund', async () => {
  const { calls } = await cancelDuring('watched-cancelled-webhook', 'watch');
  expect(calls.announced.map((a) => a.outcome)).toEqual(['cancelled']);
  expect(calls.announced[0]).toMatchObject({ state: { status: 'failed', error: { code: 'cancelled' } } });
}, 60_000);
