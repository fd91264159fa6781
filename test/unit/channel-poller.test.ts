/**
 * The channel poller (src/activities/channel-poller.ts): the polls of many jobs answered by a few
 * pages of the channel's job list, what the list does not show asked job by job, a provider
 * without a list polled job by job for good, a list outage failing the waiting polls with its
 * error, and a cancelled poll leaving the sweep.
 */
import { ChannelPoller, SCAN_FACTOR, SWEEPS_PER_PERIOD } from '../../src/activities/channel-poller';
import { UpstreamError } from '../../src/providers/http';
import type { JobPage, PollResult } from '../../src/providers/video-upstream';

const PAGE = 100;
const running = (progress: number): PollResult => ({ phase: 'running', progress });

/** A provider's jobs, newest first, listed PAGE at a time; counts every request. */
class FakeChannel {
  jobs: string[] = [];
  pages = 0;
  singles: string[] = [];
  listFails: UpstreamError | null = null;
  ignoresCursor = false;
  /** How long each page takes to come. */
  pageMs = 0;

  constructor(count: number, prefix = 'job') {
    for (let i = count - 1; i >= 0; i--) this.jobs.push(`${prefix}_${i}`);
  }

  async listJobs(after: string | undefined): Promise<JobPage> {
    this.pages++;
    if (this.pageMs > 0) await new Promise((r) => setTimeout(r, this.pageMs));
    if (this.listFails) throw this.listFails;
    const from = after === undefined || this.ignoresCursor ? 0 : this.jobs.indexOf(after) + 1;
    const ids = this.jobs.slice(from, from + PAGE);
    const more = from + ids.length < this.jobs.length;
    return { jobs: ids.map((id) => ({ id, result: running(this.progressOf(id)) })), next: more ? (ids.at(-1) ?? null) : null };
  }

  async poll(jobId: string): Promise<PollResult> {
    this.singles.push(jobId);
    return running(this.progressOf(jobId));
  }

  progressOf(id: string): number {
    return Number(id.split('_')[1]) % 100;
  }
}

function pollerOf(channel: FakeChannel, periodMs = 1000) {
  const refused: UpstreamError[] = [];
  const answered = { list: 0, single: 0 };
  const poller = new ChannelPoller({
    periodMs,
    poll: (id) => channel.poll(id),
    listJobs: (after) => channel.listJobs(after),
    onListRefused: (err) => refused.push(err),
    onAnswered: (via, jobs) => (answered[via] += jobs),
  });
  return { poller, refused, answered };
}

const signal = () => new AbortController().signal;

test('a thousand waiting jobs are answered by ten list pages, each with its own state, and no request per job', async () => {
  const channel = new FakeChannel(1000);
  const { poller, answered } = pollerOf(channel);
  const ids = channel.jobs.slice();
  const results = await Promise.all(ids.map((id) => poller.pollAt(id, Date.now(), signal())));
  expect(results).toEqual(ids.map((id) => running(channel.progressOf(id))));
  expect(channel.pages).toBe(10);
  expect(channel.singles).toEqual([]);
  expect(answered).toEqual({ list: 1000, single: 0 });
});

test('the scan stops once every waiting job is seen: the newest jobs cost one page however long the list', async () => {
  const channel = new FakeChannel(10_000);
  const { poller } = pollerOf(channel);
  await Promise.all(channel.jobs.slice(0, 30).map((id) => poller.pollAt(id, Date.now(), signal())));
  expect(channel.pages).toBe(1);
});

test('jobs the list does not show within SCAN_FACTOR entries per job watched are asked one by one', async () => {
  const channel = new FakeChannel(10_000);
  const { poller, answered } = pollerOf(channel);
  const old = ['job_5', 'job_6'];
  const fresh = channel.jobs.slice(0, 3);
  const missing = 'elsewhere_1';
  const results = await Promise.all([...fresh, ...old, missing].map((id) => poller.pollAt(id, Date.now(), signal())));
  expect(results).toEqual([...fresh, ...old, missing].map((id) => running(channel.progressOf(id))));
  // Six jobs waited: at most 6 * SCAN_FACTOR entries read, so one page of a hundred.
  expect(channel.pages).toBe(Math.ceil((6 * SCAN_FACTOR) / PAGE));
  expect(channel.singles.sort()).toEqual([...old, missing].sort());
  expect(answered).toEqual({ list: 3, single: 3 });
});

test('a slow list is read for a quarter interval at most; the jobs still due are asked one by one', async () => {
  const channel = new FakeChannel(1000);
  channel.pageMs = 40;
  const { poller, answered } = pollerOf(channel, 400);
  const results = await Promise.all(channel.jobs.map((id) => poller.pollAt(id, Date.now(), signal())));
  expect(results).toEqual(channel.jobs.map((id) => running(channel.progressOf(id))));
  // Pages at 0-40 ms and 40-80 ms; the third would start past the 100 ms gap.
  expect(channel.pages).toBeGreaterThanOrEqual(2);
  expect(channel.pages).toBeLessThanOrEqual(3);
  expect(answered).toEqual({ list: channel.pages * PAGE, single: 1000 - channel.pages * PAGE });
  expect(channel.singles).toHaveLength(1000 - channel.pages * PAGE);
});

test('a provider that refuses the list is polled job by job from then on, and said so once', async () => {
  const channel = new FakeChannel(50);
  channel.listFails = new UpstreamError('videos list: HTTP 404: not found', 'rejected', 404);
  const { poller, refused } = pollerOf(channel);
  for (let round = 0; round < 3; round++) {
    const results = await Promise.all(channel.jobs.slice(0, 5).map((id) => poller.pollAt(id, Date.now(), signal())));
    expect(results).toHaveLength(5);
  }
  expect(channel.pages).toBe(1);
  expect(channel.singles).toHaveLength(15);
  expect(refused.map((e) => e.status)).toEqual([404]);
});

test('a list outage fails the waiting polls with its error (for their own retry), and the next sweep lists again', async () => {
  const channel = new FakeChannel(50);
  const outage = new UpstreamError('videos list: HTTP 503: down', 'retryable', 503, 2000);
  channel.listFails = outage;
  const { poller, refused } = pollerOf(channel);
  const failed = await Promise.allSettled(channel.jobs.slice(0, 4).map((id) => poller.pollAt(id, Date.now(), signal())));
  expect(failed.map((r) => (r.status === 'rejected' ? r.reason : r.value))).toEqual([outage, outage, outage, outage]);
  expect(channel.singles).toEqual([]);
  channel.listFails = null;
  const results = await Promise.all(channel.jobs.slice(0, 4).map((id) => poller.pollAt(id, Date.now(), signal())));
  expect(results).toEqual(channel.jobs.slice(0, 4).map((id) => running(channel.progressOf(id))));
  expect(channel.pages).toBe(2);
  expect(refused).toEqual([]);
});

test('a provider that ignores the cursor does not loop: the jobs past its first page are asked one by one', async () => {
  const channel = new FakeChannel(300);
  channel.ignoresCursor = true;
  const { poller } = pollerOf(channel);
  // Enough jobs waiting that the scan may read past the first page.
  const ids = [...channel.jobs.slice(0, 60), channel.jobs[250]!];
  await Promise.all(ids.map((id) => poller.pollAt(id, Date.now(), signal())));
  expect(channel.pages).toBe(2);
  expect(channel.singles).toEqual([channel.jobs[250]]);
});

test('a cancelled poll rejects with the cancellation at once and its job leaves the sweep', async () => {
  const channel = new FakeChannel(10);
  const { poller } = pollerOf(channel, 200);
  // A first sweep, so the next one waits out the period.
  await poller.pollAt('job_1', Date.now(), signal());
  const controller = new AbortController();
  const cancelled = poller.pollAt('elsewhere_9', Date.now() + 200, controller.signal);
  const kept = poller.pollAt('job_2', Date.now() + 200, signal());
  const reason = new Error('cancelled');
  controller.abort(reason);
  await expect(cancelled).rejects.toBe(reason);
  await expect(kept).resolves.toEqual(running(2));
  // The list does not show elsewhere_9: had it stayed in the sweep, it would have been asked alone.
  expect(channel.singles).toEqual([]);
});

test('jobs handed over just before they are due still count as watched: a sweep of one job reads as far as the last period needs', async () => {
  const channel = new FakeChannel(10_000);
  const { poller } = pollerOf(channel, 400);
  await Promise.all(channel.jobs.slice(0, 100).map((id) => poller.pollAt(id, Date.now(), signal())));
  expect(channel.pages).toBe(1);
  // One job due in the next sweep, 350th in the list: the period's 101 jobs watched allow 404 entries.
  await poller.pollAt(channel.jobs[350]!, Date.now(), signal());
  expect(channel.pages).toBe(1 + 4);
  expect(channel.singles).toEqual([]);
});

test('each job is answered by a sweep at most a quarter interval before it is due, never later; sweeps a quarter interval apart', async () => {
  const channel = new FakeChannel(10);
  const sweeps: number[] = [];
  const list = channel.listJobs.bind(channel);
  channel.listJobs = async (after) => {
    sweeps.push(Date.now());
    return list(after);
  };
  const periodMs = 400;
  const gapMs = periodMs / SWEEPS_PER_PERIOD;
  const { poller } = pollerOf(channel, periodMs);
  const answeredAfter = async (id: string, afterMs: number): Promise<number> => {
    const at = Date.now();
    await poller.pollAt(id, at + afterMs, signal());
    return Date.now() - at;
  };
  // Two jobs due 200 ms apart are taken by two sweeps, each near its own time (the watching
  // step acts on each answer at its due time: watch-job.test.ts).
  const [soon, later] = await Promise.all([answeredAfter('job_1', 0), answeredAfter('job_2', 200)]);
  expect(soon).toBeLessThan(gapMs);
  expect(later).toBeGreaterThanOrEqual(200 - gapMs - 2);
  expect(later).toBeLessThan(200 + gapMs);
  expect(sweeps).toHaveLength(2);
  expect(sweeps[1]! - sweeps[0]!).toBeLessThanOrEqual(200 - gapMs + 5);
  // Back to back polls of one job: one sweep each, never sooner than a gap after the last.
  for (let i = 0; i < 3; i++) expect(await answeredAfter('job_3', periodMs)).toBeGreaterThanOrEqual(periodMs - gapMs - 2);
  expect(sweeps).toHaveLength(5);
  for (let i = 1; i < sweeps.length; i++) expect(sweeps[i]! - sweeps[i - 1]!).toBeGreaterThanOrEqual(gapMs - 5);
});
