/**
 * The watching step's heartbeats (src/activities/watch-job.ts) follow time, not polls: each is
 * a write on the Temporal server, so a job polled a hundred times must not cost a hundred.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { watchJob } from '../../src/activities/watch-job';
import type { PollResult } from '../../src/providers/video-upstream';
import type { JobProgress, WatchJobInput, WatchJobResult } from '../../src/workflows/video-task-types';

const POLL_MS = 2;
const POLLS = 120;

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

/** A job whose progress rises by one at every poll, done after POLLS polls. */
async function watch(progressEveryMs: number): Promise<{ beats: JobProgress[]; polls: number; result: WatchJobResult; elapsedMs: number }> {
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
          if (polls > POLLS) return { phase: 'succeeded', download: { url: 'http://upstream.invalid/job_1.mp4' } };
          return { phase: 'running', progress: Math.min(95, polls) };
        },
        store: async () => ({ key: 'videos/vidgen3:1-abc.mp4', contentType: 'video/mp4', bytes: 1024, chargeSettled: true }),
        asFailure: (err) => err,
      },
      { progressEveryMs },
    ),
  );
  return { beats, polls, result, elapsedMs: Date.now() - startedAt };
}

test('progress that moves at every poll is sent at most once per interval; the change of status at once', async () => {
  const everyMs = 100;
  const { beats, polls, result, elapsedMs } = await watch(everyMs);
  expect(polls).toBe(POLLS + 1);
  expect(beats[0]).toEqual({ status: 'processing', progress: 1 });
  // One for the change of status, then one per interval at most.
  expect(beats.length).toBeLessThanOrEqual(2 + Math.ceil(elapsedMs / everyMs));
  expect(beats.length).toBeLessThan(polls / 4);
  for (let i = 1; i < beats.length; i++) expect(beats[i]!.progress).toBeGreaterThan(beats[i - 1]!.progress);
  // The step's answer carries the last progress seen, sent or not.
  expect(result).toMatchObject({ phase: 'stored', last: { status: 'processing', progress: 95 } });
});

test('with no interval every change of progress is sent, and nothing is sent when nothing changed', async () => {
  const { beats } = await watch(0);
  expect(beats.map((b) => b.progress)).toEqual(Array.from({ length: 95 }, (_, i) => i + 1));
});
