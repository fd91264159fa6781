/**
 * The step that watches an upstream job to its end and stores its file: it polls every pollMs
 * (itself, or through its channel's poller: channel-poller.ts) inside one activity, so the
 * task's history holds this step once however many polls the job takes (a timer and a poll per
 * interval cost the server a workflow task and about seven history events each), and the
 * download needs no step of its own.
 *
 * Progress goes out as heartbeat details, which the server keeps and status reads overlay on
 * the memo (tasks/job-progress.ts), and beside each heartbeat to the task's view in the store,
 * with a lease that the next heartbeat renews (tasks/task-views.ts). Each heartbeat is a write
 * on the server (measured: ~2 ms of the dev server's CPU), so they follow neither polls nor
 * time alone: a change of status at once; progress once it has moved progressStep points since
 * the last one sent, and no sooner than progressEveryMs after it, so at most 100 / progressStep
 * of them however long the job runs; and otherwise one per half heartbeat timeout to say the
 * worker is alive, carrying the latest progress too. A retried attempt (its worker died)
 * resumes from the last heartbeat, so progress never goes back.
 *
 * Transient upstream errors are retried here, no sooner than a Retry-After: a provider that
 * stays unreachable for OUTAGE_GIVE_UP_MS, or a file that cannot be stored in STORE_ATTEMPTS
 * tries (each after a fresh poll, whose download link is current), fails the task.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { metrics, secondsSince } from '../metrics/metrics';
import { UpstreamError } from '../providers/http';
import type { DownloadRef, PollResult } from '../providers/video-upstream';
import { parseJobProgress } from '../tasks/job-progress';
import { sleepUnlessCancelled } from '../system/abortable-sleep';
import { HeartbeatPacer } from './heartbeat-pacer';
import { onPollGrid, pollGridStep } from './poll-grid';
import { estimateProgress, nextProgress } from '../workflows/progress';
import type { JobProgress, StoredVideoResult, WatchJobInput, WatchJobResult } from '../workflows/video-task-types';

export const OUTAGE_GIVE_UP_MS = 2 * 60 * 60 * 1000;
/** Why a heartbeat went out: the `reason` of gateway_job_heartbeats_total. */
export const JOB_HEARTBEAT_REASONS = ['status', 'progress', 'alive'] as const;
export type JobHeartbeatReason = (typeof JOB_HEARTBEAT_REASONS)[number];
export const STORE_ATTEMPTS = 20;

export interface JobWatchOptions {
  /** Progress that moved is sent at most this often; a change of status goes out at once. */
  progressEveryMs: number;
  /** Progress is sent once it has moved this many points (1-100) since the last one sent. */
  progressStep: number;
  /** Polls fall on multiples of this many ms (at most a quarter interval; 0: off): poll-grid.ts. */
  pollGridMs: number;
}

export interface JobWatchSteps {
  /**
   * Asks for the job's state, due at `dueAt` (epoch ms); may answer up to `pollLeadMs` sooner.
   * watchJob sleeps until `pollLeadMs` before that itself, so a poll that answers at once cannot
   * make the loop spin, and acts on an early answer at `dueAt`; rejects with the signal's
   * reason when it aborts meanwhile.
   */
  poll(dueAt: number, signal: AbortSignal): Promise<PollResult>;
  /**
   * How long before its due time a poll is handed over: 0 for a request of its own; a channel
   * poller's quarter interval, since its sweep answers each job up to that much sooner
   * (channel-poller.ts). At most half of a wait is taken early.
   */
  pollLeadMs: number;
  /** Stores the finished file (and settles the charge); `beat` is called as bytes arrive. */
  store(download: DownloadRef, beat: () => void): Promise<StoredVideoResult>;
  /** Turns what poll throws into the workflow's terms. */
  asFailure(err: unknown): unknown;
  /**
   * Reports where the job stands to the task's view, with a lease of `leaseMs` (the step's
   * heartbeat timeout), beside every heartbeat, so the view answers status reads for as long as
   * the step is alive (tasks/task-views.ts). Must not throw or wait.
   */
  report?(job: JobProgress, leaseMs: number): void;
}

export async function watchJob(input: WatchJobInput, steps: JobWatchSteps, opts: JobWatchOptions): Promise<WatchJobResult> {
  const ctx = Context.current();
  const resumed = parseJobProgress(ctx.info.heartbeatDetails);
  let at: JobProgress = resumed && resumed.progress >= input.from.progress ? resumed : input.from;
  const heartbeats = new HeartbeatPacer<JobProgress>(ctx, input.pollMs);
  // A step scheduled with no heartbeat timeout cannot be told lost: its view takes no lease.
  // None at the start: the workflow's publish just before it leased the view for a minute.
  const report = () => steps.report?.(at, ctx.info.heartbeatTimeoutMs ?? 0);
  let sent = at;
  const beat = (reason: JobHeartbeatReason) => {
    sent = at;
    heartbeats.send(at);
    report();
    metrics.jobHeartbeats.inc({ reason });
  };
  const beatIfStale = () => {
    if (heartbeats.isStale()) beat('alive');
  };
  let outageSince: number | undefined;
  let storeFailures = 0;
  let waitMs = input.pollMs;
  const gridStep = pollGridStep(opts.pollGridMs, input.pollMs);
  for (;;) {
    if (Date.now() > input.deadline) return { phase: 'timeout', last: at };
    const dueAt = onPollGrid(Date.now() + Math.min(waitMs, Math.max(0, input.deadline - Date.now()) + 1), gridStep);
    const afterMs = dueAt - Date.now();
    waitMs = input.pollMs;
    // Cancellation-aware: a cancelled task stops in this sleep or the poll (the cancel arrives
    // with a heartbeat's answer), with its CancelledFailure (asFailure passes it on unchanged).
    await sleepUnlessCancelled(ctx.cancellationSignal, afterMs - Math.min(steps.pollLeadMs, afterMs / 2));
    let result: PollResult;
    try {
      result = await steps.poll(dueAt, ctx.cancellationSignal);
      outageSince = undefined;
    } catch (err) {
      if (!(err instanceof UpstreamError) || err.kind === 'rejected') throw steps.asFailure(err);
      outageSince ??= Date.now();
      if (Date.now() - outageSince > OUTAGE_GIVE_UP_MS) {
        throw ApplicationFailure.nonRetryable(
          `The provider could not be reached for ${OUTAGE_GIVE_UP_MS / 60_000} minutes: ${err.message}`,
          'UpstreamUnavailable',
        );
      }
      waitMs = Math.max(input.pollMs, err.retryAfterMs ?? 0);
      beatIfStale();
      continue;
    }
    // An early answer (a channel poller's sweep takes jobs up to a quarter interval before they
    // are due) is acted on at the job's own due time: the next poll is timed from the answer,
    // so answers acted on together would bring their jobs' next polls, and the downloads and
    // workflow tasks of those that finished, into step, in bursts of a quarter of the channel.
    if (dueAt > Date.now()) await sleepUnlessCancelled(ctx.cancellationSignal, dueAt - Date.now());
    if (result.phase === 'failed') return { ...result, last: at };
    if (result.phase === 'succeeded') {
      try {
        const doneAt = process.hrtime.bigint();
        const video = await steps.store(result.download, beatIfStale);
        // Upstream done (as this poll saw it) to the file stored and, as a rule, the charge settled.
        metrics.completionLag.observe(secondsSince(doneAt));
        return { phase: 'stored', video, last: at };
      } catch (err) {
        if (err instanceof CancelledFailure || (err instanceof ApplicationFailure && err.nonRetryable)) throw err;
        if (++storeFailures >= STORE_ATTEMPTS) {
          throw ApplicationFailure.nonRetryable(
            `The finished video could not be stored after ${STORE_ATTEMPTS} tries: ${(err as Error).message}`,
            'UpstreamUnavailable',
          );
        }
        ctx.log.warn('the finished video could not be stored; polling again for a fresh link', { taskId: input.taskId, err: (err as Error).message });
        waitMs = Math.min(input.pollMs * 2 ** storeFailures, 60_000);
        beatIfStale();
        continue;
      }
    }
    at = {
      status: result.phase === 'running' ? 'processing' : at.status,
      progress: nextProgress(at.progress, result.progress, estimateProgress(Date.now() - input.submittedAt, input.expectedJobMs)),
    };
    if (at.status !== sent.status) beat('status');
    else if (at.progress - sent.progress >= opts.progressStep && heartbeats.msSinceSent() >= opts.progressEveryMs) beat('progress');
    else beatIfStale();
  }
}
