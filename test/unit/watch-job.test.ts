/**
 * The watching step's heartbeats (src/activities/watch-job.ts) follow neither polls nor time
 * alone: each is a write on the Temporal server, so a job polled a hundred times must not cost
 * a hundred, and a job ten times as long must not send ten times the progress.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { watchJob } from '../../src/activities/watch-job';
import { metrics } from '../../src/metrics/metrics';
import type { PollResult } from '../../src/providers/video-upstream';
import type { JobProgress, WatchJobInput, WatchJobResult } from '../../src/workflows/video-task-types';
import { WATCH_HEARTBEAT_MAX_MS, watchHeartbeatTimeoutMs } from '../../src/workflows/watch-heartbeat';
import { onPollGrid, pollGridStep } from '../../src/activities/poll-grid';

const POLL_MS = 2;
const POLLS = 120;

interface WatchOptions {
  progressEveryMs: number;
  progressStep: number;
  /** Polls before the job ends (POLLS by default). */
  polls?: number;
  /** Polls per point of progress (1 by default). */
  pollsPerPoint?: number;
}

const input = (): WatchJobInput => ({
  taskId: 'vidgen3:1-abc',
  channel: 'sim',
  jobId: 'job_1',
  pollMs: POLL_MS,
  expectedJobMs: 1000,
  submittedAt: Date.now(),
  deadline: Date.now() + 60_000,
  from: { status: 'pending', progress: 0 },
});

/** A job whose progress rises by one every `pollsPerPoint` polls (up to 95), done after `polls` polls. */
async function watch(opts: WatchOptions): Promise<{ beats: JobProgress[]; polls: number; result: WatchJobResult; elapsedMs: number }> {
  const last = opts.polls ?? POLLS;
  const pollsPerPoint = opts.pollsPerPoint ?? 1;
  const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 60_000 });
  const beats: JobProgress[] = [];
  env.on('heartbeat', (d: JobProgress) => beats.push(d));
  let polls = 0;
  const startedAt = Date.now();
  const result = await env.run((): Promise<WatchJobResult> =>
    watchJob(
      input(),
      {
        poll: async (): Promise<PollResult> => {
          polls++;
          if (polls > last) return { phase: 'succeeded', download: { url: 'http://upstream.invalid/job_1.mp4' } };
          return { phase: 'running', progress: Math.min(95, Math.ceil(polls / pollsPerPoint)) };
        },
        pollLeadMs: 0,
        store: async () => ({ key: 'videos/vidgen3:1-abc.mp4', contentType: 'video/mp4', bytes: 1024, chargeSettled: true }),
        asFailure: (err) => err,
      },
      { progressEveryMs: opts.progressEveryMs, progressStep: opts.progressStep, pollGridMs: 0 },
    ),
  );
  return { beats, polls, result, elapsedMs: Date.now() - startedAt };
}

test('progress that moves at every poll is sent at most once per interval; the change of status at once', async () => {
  const everyMs = 100;
  const { beats, polls, result, elapsedMs } = await watch({ progressEveryMs: everyMs, progressStep: 1 });
  expect(polls).toBe(POLLS + 1);
  expect(beats[0]).toEqual({ status: 'processing', progress: 1 });
  // One for the change of status, then one per interval at most.
  expect(beats.length).toBeLessThanOrEqual(2 + Math.ceil(elapsedMs / everyMs));
  expect(beats.length).toBeLessThan(polls / 4);
  for (let i = 1; i < beats.length; i++) expect(beats[i]!.progress).toBeGreaterThan(beats[i - 1]!.progress);
  // The step's answer carries the last progress seen, sent or not.
  expect(result).toMatchObject({ phase: 'stored', last: { status: 'processing', progress: 95 } });
});

test('with no interval and a step of one every change of progress is sent, and nothing is sent when nothing changed', async () => {
  const { beats } = await watch({ progressEveryMs: 0, progressStep: 1 });
  expect(beats.map((b) => b.progress)).toEqual(Array.from({ length: 95 }, (_, i) => i + 1));
});

/** gateway_job_heartbeats_total by reason, as the worker's /metrics shows it. */
async function heartbeatsCounted(): Promise<Record<string, number>> {
  const { values } = await metrics.jobHeartbeats.get();
  return Object.fromEntries(values.map((v) => [String(v.labels.reason), v.value]));
}

test('progress goes out in steps: a job polled five times as often sends the same heartbeats', async () => {
  const before = await heartbeatsCounted();
  const short = await watch({ progressEveryMs: 0, progressStep: 10, polls: 100 });
  const long = await watch({ progressEveryMs: 0, progressStep: 10, polls: 500, pollsPerPoint: 5 });
  const after = await heartbeatsCounted();
  // Each counted by its reason: two changes of status, nine steps of progress each, nothing stale.
  expect({
    status: (after.status ?? 0) - (before.status ?? 0),
    progress: (after.progress ?? 0) - (before.progress ?? 0),
    alive: (after.alive ?? 0) - (before.alive ?? 0),
  }).toEqual({
    status: 2,
    progress: 18,
    alive: 0,
  });
  expect(long.polls).toBe(501);
  // The change of status, then one per ten points: 1, 11, 21, ... 91.
  const expected = [1, 11, 21, 31, 41, 51, 61, 71, 81, 91];
  expect(short.beats.map((b) => b.progress)).toEqual(expected);
  expect(long.beats.map((b) => b.progress)).toEqual(expected);
  // What the step answers is the last progress seen, not the last sent.
  expect(long.result).toMatchObject({ phase: 'stored', last: { status: 'processing', progress: 95 } });
});

test('a poll that answers at once cannot make the loop spin: each is asked after at least half its wait, however early it may be handed over', async () => {
  const pollMs = 40;
  const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 60_000 });
  const askedAt: number[] = [];
  const dues: number[] = [];
  await env.run(() =>
    watchJob(
      { ...input(), pollMs },
      {
        poll: async (dueAt): Promise<PollResult> => {
          askedAt.push(Date.now());
          dues.push(dueAt);
          if (askedAt.length > 5) return { phase: 'succeeded', download: { url: 'http://upstream.invalid/job_1.mp4' } };
          return { phase: 'running', progress: askedAt.length };
        },
        // Far more than the interval: only half of each wait may be taken early.
        pollLeadMs: 10 * pollMs,
        store: async () => ({ key: 'videos/vidgen3:1-abc.mp4', contentType: 'video/mp4', bytes: 1024, chargeSettled: true }),
        asFailure: (err) => err,
      },
      { progressEveryMs: 0, progressStep: 1, pollGridMs: 0 },
    ),
  );
  expect(askedAt).toHaveLength(6);
  for (let i = 1; i < askedAt.length; i++) {
    expect(askedAt[i]! - askedAt[i - 1]!).toBeGreaterThanOrEqual(pollMs / 2 - 2);
    // Each poll is told when it is due: a whole interval after the last answer.
    expect(dues[i]! - askedAt[i - 1]!).toBeGreaterThanOrEqual(pollMs - 2);
  }
});

test("an early answer is acted on at the job's due time: the next poll and the download are timed from it, not from the answer", async () => {
  const pollMs = 60;
  const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 60_000 });
  const dues: number[] = [];
  let storedAt = 0;
  await env.run(() =>
    watchJob(
      { ...input(), pollMs },
      {
        // A channel poller's sweep: the answer comes as soon as the job is handed over.
        poll: async (dueAt): Promise<PollResult> => {
          dues.push(dueAt);
          if (dues.length > 3) return { phase: 'succeeded', download: { url: 'http://upstream.invalid/job_1.mp4' } };
          return { phase: 'running', progress: dues.length };
        },
        pollLeadMs: pollMs / 4,
        store: async () => {
          storedAt = Date.now();
          return { key: 'videos/vidgen3:1-abc.mp4', contentType: 'video/mp4', bytes: 1024, chargeSettled: true };
        },
        asFailure: (err) => err,
      },
      { progressEveryMs: 0, progressStep: 1, pollGridMs: 0 },
    ),
  );
  expect(dues).toHaveLength(4);
  // Each due a whole interval after the last: acted on early, each would come a quarter sooner.
  for (let i = 1; i < dues.length; i++) expect(dues[i]! - dues[i - 1]!).toBeGreaterThanOrEqual(pollMs - 2);
  expect(storedAt).toBeGreaterThanOrEqual(dues[3]! - 1);
});

/**
 * A job with no progress of its own (Veo) that ends at its expected length, its progress
 * estimated from time, watched with the given heartbeat timeout: the heartbeats it sends.
 */
async function watchEstimated(expectedJobMs: number, heartbeatTimeoutMs: number): Promise<JobProgress[]> {
  const env = new MockActivityEnvironment({ heartbeatTimeoutMs });
  const beats: JobProgress[] = [];
  env.on('heartbeat', (d: JobProgress) => beats.push(d));
  const submittedAt = Date.now();
  await env.run(() =>
    watchJob(
      { ...input(), pollMs: POLL_MS, expectedJobMs, submittedAt },
      {
        poll: async (): Promise<PollResult> =>
          Date.now() - submittedAt >= expectedJobMs
            ? { phase: 'succeeded', download: { url: 'http://upstream.invalid/job_1.mp4' } }
            : { phase: 'running', progress: null },
        pollLeadMs: 0,
        store: async () => ({ key: 'videos/vidgen3:1-abc.mp4', contentType: 'video/mp4', bytes: 1024, chargeSettled: true }),
        asFailure: (err) => err,
      },
      { progressEveryMs: 0, progressStep: 10, pollGridMs: 0 },
    ),
  );
  return beats;
}

test("with the workflow's heartbeat timeout, a job ten times as long sends about the same heartbeats; with a fixed one, many times more", async () => {
  // The ratio of watchHeartbeatTimeoutMs for jobs long enough to be past its floor.
  const quarter = (expectedJobMs: number) => expectedJobMs / 4;
  const short = await watchEstimated(300, quarter(300));
  const long = await watchEstimated(3000, quarter(3000));
  // A change of status, eight steps of progress (10 to 80) and a few alive ones in the slow tail
  // (11 of them measured, whatever the length; fewer when a busy machine stalls the loop).
  expect(short.length).toBeLessThanOrEqual(14);
  expect(long.length).toBeLessThanOrEqual(14);
  // The same long job with the short one's timeout: alive every 37.5 ms for 3 s (77 measured).
  const fixed = await watchEstimated(3000, quarter(300));
  expect(fixed.length).toBeGreaterThan(2 * Math.max(long.length, 9));
});

test('the heartbeat timeout of the watching step: two polls and 30 s, a quarter of a long expected job, at most 10 minutes', () => {
  expect(watchHeartbeatTimeoutMs({ pollMs: 10_000, expectedJobMs: 90_000 })).toBe(50_000);
  expect(watchHeartbeatTimeoutMs({ pollMs: 2_000, expectedJobMs: 60_000 })).toBe(34_000);
  expect(watchHeartbeatTimeoutMs({ pollMs: 10_000, expectedJobMs: 20 * 60_000 })).toBe(5 * 60_000);
  expect(watchHeartbeatTimeoutMs({ pollMs: 10_000, expectedJobMs: 24 * 3_600_000 })).toBe(WATCH_HEARTBEAT_MAX_MS);
  // A poll interval longer than a quarter of the job keeps the floor: a slow poll is not a lost worker.
  expect(watchHeartbeatTimeoutMs({ pollMs: 600_000, expectedJobMs: 24 * 3_600_000 })).toBe(1_230_000);
});

test('on a grid, every poll is due on a multiple of its step and at least an interval after the last', async () => {
  const pollMs = 240;
  const gridMs = 50;
  const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 60_000 });
  const dues: number[] = [];
  await env.run(() =>
    watchJob(
      { ...input(), pollMs },
      {
        poll: async (dueAt): Promise<PollResult> => {
          dues.push(dueAt);
          return dues.length > 4 ? { phase: 'succeeded', download: { url: 'http://upstream.invalid/job_1.mp4' } } : { phase: 'running', progress: null };
        },
        pollLeadMs: 0,
        store: async () => ({ key: 'videos/vidgen3:1-abc.mp4', contentType: 'video/mp4', bytes: 1024, chargeSettled: true }),
        asFailure: (err) => err,
      },
      { progressEveryMs: 0, progressStep: 10, pollGridMs: gridMs },
    ),
  );
  expect(dues).toHaveLength(5);
  for (const due of dues) expect(due % gridMs).toBe(0);
  for (let i = 1; i < dues.length; i++) expect(dues[i]! - dues[i - 1]!).toBeGreaterThanOrEqual(pollMs);
});

test('the grid: rounded up to its step, a step of at most a quarter interval, and 0 leaves times as they are', () => {
  expect(onPollGrid(1_234, 100)).toBe(1_300);
  expect(onPollGrid(1_300, 100)).toBe(1_300);
  expect(onPollGrid(1_234, 0)).toBe(1_234);
  expect(pollGridStep(100, 10_000)).toBe(100);
  expect(pollGridStep(100, 200)).toBe(50);
  expect(pollGridStep(100, 2)).toBe(0);
  expect(pollGridStep(0, 10_000)).toBe(0);
});
