/**
 * A video task's submit, failing over to the next channel serving its model (README "Video
 * failover"). Workflow code: deterministic, its I/O in the submit step it is given.
 *
 * On a channel with a channel after it, each attempt is a step of its own (no server retries),
 * so the workflow sees how every attempt ended, up to the channel's `submitAttempts`:
 * - accepted: done, on that channel;
 * - rejected (4xx, bad input, ...): the task fails, as without failover;
 * - not accepted (429, 5xx, connection refused: the provider surely took no job): the next
 *   attempt, and after the last one the next channel;
 * - outcome unknown (a timeout or a broken connection after the request was sent, an unreadable
 *   answer, a worker lost mid-step): the provider may hold a job, and nothing short of it
 *   returning that job proves there is none (a keyed retry answered 503 may come from a provider
 *   that stored the job and is down now). So the task stays on its channel: its keyed retries get
 *   the job back from a provider that honours the idempotency key every attempt carries.
 * A task that stays, and the last channel, submit as before failover: retried by the server
 * until accepted or rejected. So no task ever holds two accepted upstream jobs.
 */
import { ActivityFailure, ApplicationFailure, isCancellation, sleep, TimeoutFailure } from '@temporalio/workflow';
import type { TaskFailover, TaskRequest } from '../tasks/task';
import { FAILURE_TYPES, SUBMIT_FAILURE_TYPES, type ChannelPlan } from './video-task-types';

/** Workflows started from this version fail a submit over to the next channel; earlier runs replay with one channel. */
export const SUBMIT_FAILOVER_PATCH = 'video-submit-failover';

export interface SubmitVideoInput {
  request: TaskRequest;
  plan: ChannelPlan;
  prompt: string;
  characterIds: string[];
}

type SubmitVideo = (input: SubmitVideoInput) => Promise<string>;

export interface SubmitSteps {
  /** One attempt, not retried by the server. */
  once(plan: ChannelPlan): SubmitVideo;
  /** The submit without failover: retried by the server until accepted or rejected. */
  patiently(plan: ChannelPlan): SubmitVideo;
}

/** How one attempt ended; `final` ones end the task (rejected, cancelled). */
type Attempt = { kind: 'not_accepted'; reason: string; retryAfterMs: number } | { kind: 'unknown' } | { kind: 'final' };

const FINAL_TYPES: ReadonlySet<string> = new Set(Object.values(FAILURE_TYPES));

function retryAfterOf(failure: ApplicationFailure): number {
  const detail: unknown = failure.details?.[0];
  if (detail && typeof detail === 'object' && 'retryAfterMs' in detail && typeof detail.retryAfterMs === 'number') return detail.retryAfterMs;
  return 0;
}

/**
 * Classifies a failed attempt by the failure its step ended with (video-activities.ts
 * asSubmitFailure). A step's failure is an ActivityFailure around it; a local step's (a first
 * attempt made in the workflow task, video-task.ts firstTryThenStep) is the failure itself.
 */
export function attemptOf(err: unknown): Attempt {
  if (isCancellation(err)) return { kind: 'final' };
  const cause = err instanceof ActivityFailure ? err.cause : err;
  // The step timed out (a worker lost, a request that hung): the request may have been sent.
  if (cause instanceof TimeoutFailure) return { kind: 'unknown' };
  if (!(cause instanceof ApplicationFailure)) return { kind: 'final' };
  if (cause.type && FINAL_TYPES.has(cause.type)) return { kind: 'final' };
  if (cause.type === SUBMIT_FAILURE_TYPES.notAccepted) return { kind: 'not_accepted', reason: cause.message, retryAfterMs: retryAfterOf(cause) };
  // SubmitOutcomeUnknown, and what the patient submit retries (a user's URL not answering, busy fetch slots).
  return { kind: 'unknown' };
}

/**
 * The attempts on a channel that has a next one: the job id when one was accepted, the reason
 * when the provider surely took none after the last attempt, or 'stay' when the task may not
 * leave the channel.
 */
async function tryChannel(
  plan: ChannelPlan,
  input: Omit<SubmitVideoInput, 'plan'>,
  steps: SubmitSteps,
): Promise<{ jobId: string } | { reason: string } | 'stay'> {
  const attempts = plan.submitAttempts ?? 1;
  let delayMs = plan.retryInitialMs;
  for (let n = 1; ; n++) {
    let attempt: Attempt;
    try {
      return { jobId: await steps.once(plan)({ ...input, plan }) };
    } catch (err) {
      attempt = attemptOf(err);
      if (attempt.kind === 'final') throw err;
    }
    // Unknown: only this channel may hold the job; its keyed retries find it where the provider honours the key.
    if (attempt.kind === 'unknown') return 'stay';
    if (n >= attempts) return { reason: attempt.reason };
    await sleep(Math.max(delayMs, attempt.retryAfterMs));
    delayMs = Math.min(delayMs * 2, plan.retryMaxMs);
  }
}

/**
 * Submits on the first channel, then the fallbacks in order while the provider surely took no
 * job; each move is reported to `failedOver` (the task's state) before the next channel is tried.
 * Returns the job and the plan of the channel that accepted it.
 */
export async function submitFailingOver(
  first: ChannelPlan,
  fallbacks: readonly ChannelPlan[],
  input: Omit<SubmitVideoInput, 'plan'>,
  steps: SubmitSteps,
  failedOver: (failover: TaskFailover) => void,
): Promise<{ plan: ChannelPlan; jobId: string }> {
  let plan = first;
  for (const next of fallbacks) {
    const tried = await tryChannel(plan, input, steps);
    if (tried === 'stay') break;
    if ('jobId' in tried) return { plan, jobId: tried.jobId };
    failedOver({ from: plan.channel, to: next.channel, reason: tried.reason, at: Math.floor(Date.now() / 1000) });
    plan = next;
  }
  return { plan, jobId: await steps.patiently(plan)({ ...input, plan }) };
}
