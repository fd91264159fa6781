/**
 * One poller per channel that checks many jobs per request, for providers that list their jobs
 * (the OpenAI-style `GET /v1/videos`). The watching steps of one worker whose jobs run on the
 * same channel hand their polls to it instead of each asking for its own job: each job is
 * still asked once per interval, when it is due, but by a sweep that reads the channel's job
 * list, newest first, page by page, until it has seen every job due, so a thousand jobs cost
 * about forty requests per poll interval (four sweeps of ten pages) instead of a thousand.
 * Per-job requests cost the worker about 0.6 ms of CPU each (Node's HTTP client, mostly), which
 * made a long job's cost grow with its number of polls.
 *
 * What the list does not show is still asked job by job, so a job is never left unanswered:
 * - a job beyond the pages read: a sweep reads at most SCAN_FACTOR entries per job watched (a
 *   provider key shared with much other traffic, or one very old job, cannot make it read the
 *   whole history), and for at most a quarter interval (pages come one after another);
 * - a job the list leaves out (a provider's list that lags its jobs);
 * - every job of a channel whose provider refuses the list itself (a 4xx on its first page: a
 *   compatible provider without the endpoint). The poller then stops listing for good and says
 *   so once, through `onListRefused`.
 * A list that fails as an outage does (5xx, 429, no answer) fails the polls of the jobs it had
 * not answered yet with its error, and each watching step treats it as its own failed poll
 * (retried after the Retry-After, the task failed after a long outage): the poller adds no
 * retry policy of its own.
 */
import type { JobPage, PollResult } from '../providers/video-upstream';
import { UpstreamError } from '../providers/http';

/** A sweep reads at most this many list entries per job watched before it asks the rest one by one. */
export const SCAN_FACTOR = 4;
/**
 * Sweeps per poll interval. Each job is still asked once per interval, on its own schedule, by
 * the first sweep within a quarter interval before it is due; its watching step acts on the
 * answer at its due time (watch-job.ts), so completions are handled spread over the interval as
 * with per-job polls, not all at one instant (which queues their downloads and workflow tasks
 * behind each other), for four times the list pages of one sweep per interval.
 */
export const SWEEPS_PER_PERIOD = 4;
/**
 * Jobs asked one by one at once, in a sweep: as many requests in flight as a worker's own
 * watching steps would have when a provider's list shows nothing.
 */
const SINGLE_POLLS_AT_ONCE = 64;

export interface ChannelPollerDeps {
  /** The channel's poll interval: sweeps start at most SWEEPS_PER_PERIOD times per period. */
  periodMs: number;
  /** One job, as the per-job poll asks it. */
  poll(jobId: string): Promise<PollResult>;
  /** One page of the channel's jobs, newest first, after the cursor (the first page without one). */
  listJobs(after: string | undefined): Promise<JobPage>;
  /** The provider refused the list: the poller asks job by job from now on. */
  onListRefused(err: UpstreamError): void;
  /** Counts each job's answer by how it came. */
  onAnswered?(via: 'list' | 'single', jobs: number): void;
}

interface Waiter {
  /** When the job is to be asked (epoch ms); a sweep up to one gap sooner takes it. */
  due: number;
  resolve(result: PollResult): void;
  reject(err: unknown): void;
}

type Batch = Map<string, Waiter[]>;

export class ChannelPoller {
  private waiting: Batch = new Map();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  private sweeping = false;
  private lastSweepAt = Number.NEGATIVE_INFINITY;
  private listing = true;
  /** The jobs each sweep of the last period took: how many jobs the channel watches. */
  private recentSweeps: { at: number; jobs: number }[] = [];
  /** How much sooner than its due time a job may be answered: one gap between sweeps. */
  readonly leadMs: number;

  constructor(private readonly deps: ChannelPollerDeps) {
    this.leadMs = deps.periodMs / SWEEPS_PER_PERIOD;
  }

  /**
   * A watching step's poll: the job's state as the sweep that takes it saw it, answered by
   * `dueAt` and up to `leadMs` sooner (a step hands its job over about that long before it is
   * due, and waits for its due time to act on the answer). Rejects with the signal's reason when
   * it aborts first (the step was cancelled).
   */
  pollAt(jobId: string, dueAt: number, signal: AbortSignal): Promise<PollResult> {
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<PollResult>((resolve, reject) => {
      const onAbort = () => {
        this.drop(jobId, waiter);
        reject(signal.reason);
      };
      const waiter: Waiter = {
        due: dueAt,
        resolve: (result) => {
          signal.removeEventListener('abort', onAbort);
          resolve(result);
        },
        reject: (err) => {
          signal.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const same = this.waiting.get(jobId);
      if (same) same.push(waiter);
      else this.waiting.set(jobId, [waiter]);
      this.scheduleFor(waiter.due);
    });
  }

  /** A cancelled step's waiter leaves the sweeps to come (one under way answers nobody for it). */
  private drop(jobId: string, waiter: Waiter): void {
    const same = this.waiting.get(jobId);
    if (!same) return;
    const rest = same.filter((w) => w !== waiter);
    if (rest.length > 0) this.waiting.set(jobId, rest);
    else this.waiting.delete(jobId);
  }

  /** A sweep by the time a job due at `due` must be asked: no sooner than a gap after the last one. */
  private scheduleFor(due: number): void {
    if (this.sweeping) return; // the sweep under way schedules the next when it ends
    const at = Math.max(due - this.leadMs, this.lastSweepAt + this.leadMs);
    if (this.timer && this.timerAt <= at) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Number.POSITIVE_INFINITY;
        void this.sweep();
      },
      Math.max(0, at - Date.now()),
    );
  }

  private async sweep(): Promise<void> {
    this.sweeping = true;
    const now = Date.now();
    this.lastSweepAt = now;
    // The jobs due within the next gap; the rest wait for a later sweep.
    const batch: Batch = new Map();
    for (const [id, waiters] of this.waiting) {
      if (waiters.some((w) => w.due <= now + this.leadMs)) {
        batch.set(id, waiters);
        this.waiting.delete(id);
      }
    }
    // Every job watched may sit anywhere in the list, due now or not. A step hands its job
    // over only a gap before it is due, so the jobs watched are counted as those the sweeps of
    // the last period took (each job about once), or those waiting now if more.
    this.recentSweeps = this.recentSweeps.filter((s) => s.at > now - this.deps.periodMs);
    this.recentSweeps.push({ at: now, jobs: batch.size });
    const watched = Math.max(
      batch.size + this.waiting.size,
      this.recentSweeps.reduce((sum, s) => sum + s.jobs, 0),
    );
    try {
      if (this.listing && batch.size > 0) await this.answerFromList(batch, watched * SCAN_FACTOR);
      await this.answerOneByOne(batch);
    } catch (err) {
      settleAll(batch, (w) => w.reject(err));
    } finally {
      this.sweeping = false;
      let next = Number.POSITIVE_INFINITY;
      for (const waiters of this.waiting.values()) for (const w of waiters) next = Math.min(next, w.due);
      if (next !== Number.POSITIVE_INFINITY) this.scheduleFor(next);
    }
  }

  /**
   * Answers (and takes out of `batch`) the jobs the list shows; throws a list's outage. Pages are
   * read one after another (each needs the last one's cursor), so a long list costs a sweep its
   * length times a round trip: once it has read for a gap, the sweep stops and leaves the jobs
   * still due to be asked one by one, so a slow list delays a poll by at most a quarter interval.
   */
  private async answerFromList(batch: Batch, budget: number): Promise<void> {
    const stopAt = Date.now() + this.leadMs;
    let read = 0;
    let after: string | undefined;
    let answered = 0;
    try {
      while (batch.size > 0 && read < budget && (read === 0 || Date.now() < stopAt)) {
        const page = await this.deps.listJobs(after);
        read += Math.max(1, page.jobs.length);
        for (const job of page.jobs) {
          const waiters = batch.get(job.id);
          if (!waiters) continue;
          batch.delete(job.id);
          answered++;
          for (const w of waiters) w.resolve(job.result);
        }
        // A provider that ignores the cursor would hand back the same page for ever.
        if (page.next === null || page.next === after) break;
        after = page.next;
      }
    } catch (err) {
      if (!(err instanceof UpstreamError) || err.kind !== 'rejected') throw err;
      // Refused on its first page: this provider has no list. On a later one (a cursor it no
      // longer knows), only this sweep's remaining jobs are asked one by one.
      if (after === undefined) {
        this.listing = false;
        this.deps.onListRefused(err);
      }
    } finally {
      if (answered > 0) this.deps.onAnswered?.('list', answered);
    }
  }

  private async answerOneByOne(batch: Batch): Promise<void> {
    const ids = [...batch.keys()];
    if (ids.length === 0) return;
    this.deps.onAnswered?.('single', ids.length);
    let next = 0;
    const lane = async () => {
      for (let id = ids[next++]; id !== undefined; id = ids[next++]) {
        const waiters = batch.get(id) ?? [];
        batch.delete(id);
        try {
          const result = await this.deps.poll(id);
          for (const w of waiters) w.resolve(result);
        } catch (err) {
          for (const w of waiters) w.reject(err);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(SINGLE_POLLS_AT_ONCE, ids.length) }, lane));
  }
}

function settleAll(batch: Batch, settle: (w: Waiter) => void): void {
  for (const waiters of batch.values()) for (const w of waiters) settle(w);
  batch.clear();
}
