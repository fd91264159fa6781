/**
 * One background response (POST /v1/responses with `background: true`) = one workflow (workflow
 * id = the gateway's response id), run like a video task:
 *   claim its charge (the hold of its worst-case price) -> create it upstream (failing over to
 *   the next channel while the provider surely took nothing) -> watch it to its end in one
 *   heartbeating step (each change of state written to the response's record) -> close: its end
 *   recorded, its hold settled (the reported usage billed, the rest released), its completion
 *   webhook announced.
 * Cancelled (POST /v1/responses/{id}/cancel, DELETE, an operator): the provider asked to cancel,
 * the response closed as cancelled, billed for what the provider says it produced.
 * The record in the gateway's store is what every read returns, so reads need no worker and no
 * history; the history has the same few events whatever the response's length.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  sleep,
  TimeoutFailure,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { BillingActivities } from '../billing/charge-activities';
import type { ResponseActivities } from '../activities/response-activities';
import type { TextUsage } from '../providers/usage';
import { SA_STATUS } from '../temporal/search-attributes';
import { attemptOf } from './submit-failover';
import {
  RESPONSE_TIMEOUT,
  type BackgroundResponseInput,
  type ResponseChannelPlan,
  type ResponseEnd,
  type SubmitResponseInput,
  type WatchResponseResult,
} from './background-response-types';
import { FAILURE_TYPES } from './video-task-types';
import { pollingStepHeartbeatTimeoutMs } from './watch-heartbeat';

const NON_RETRYABLE = Object.values(FAILURE_TYPES);

/** Short store writes, retried however long the store is away (the workflow waits for them). */
const { claimCharge } = proxyLocalActivities<BillingActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m', nonRetryableErrorTypes: NON_RETRYABLE },
});
const { closeBackgroundResponse } = proxyLocalActivities<ResponseActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

/** Asking the provider to stop: a few short tries, best-effort (the close never waits long for it). */
const { cancelUpstreamResponse } = proxyActivities<ResponseActivities>({
  startToCloseTimeout: '20s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 3 },
});

const SUBMIT_HEARTBEAT_TIMEOUT = '15s';

function submitStep(input: BackgroundResponseInput, maximumAttempts?: number) {
  return proxyActivities<ResponseActivities>({
    startToCloseTimeout: '3m',
    heartbeatTimeout: SUBMIT_HEARTBEAT_TIMEOUT,
    // A channel that stays unreachable for an hour fails the response (refunded) rather than wait on.
    ...(maximumAttempts === undefined ? { scheduleToCloseTimeout: '1h' } : {}),
    retry: {
      initialInterval: input.retryInitialMs,
      backoffCoefficient: 2,
      maximumInterval: input.retryMaxMs,
      nonRetryableErrorTypes: NON_RETRYABLE,
      ...(maximumAttempts === undefined ? {} : { maximumAttempts }),
    },
  }).submitBackgroundResponse;
}

/**
 * Lasts as long as the response may (until its deadline); heartbeats at each change of status
 * and at least once per half heartbeat timeout, so a worker that died is noticed within two
 * poll intervals and half a minute and the watch resumes on another one (it only polls: the
 * provider holds the response).
 */
function watchStep(plan: ResponseChannelPlan, input: BackgroundResponseInput) {
  const lifetimeMs = Math.max(60_000, input.deadline - Date.now() + 60_000);
  return proxyActivities<ResponseActivities>({
    startToCloseTimeout: lifetimeMs,
    scheduleToCloseTimeout: lifetimeMs,
    heartbeatTimeout: pollingStepHeartbeatTimeoutMs(plan.pollMs),
    retry: { initialInterval: input.retryInitialMs, backoffCoefficient: 2, maximumInterval: input.retryMaxMs, nonRetryableErrorTypes: NON_RETRYABLE },
  }).watchBackgroundResponse;
}

/**
 * Creates the response on the first channel, then on the next ones while the provider surely
 * took nothing (429, 5xx that mean "not taken", connection refused), up to `submitAttempts`
 * tries on each. A try whose outcome is unknown keeps the response on its channel, retried under
 * the same Idempotency-Key, as the last channel is: never two upstream responses for one.
 */
async function submitFailingOver(input: BackgroundResponseInput): Promise<{ plan: ResponseChannelPlan; upstreamId: string } | null> {
  const request = (plan: ResponseChannelPlan): SubmitResponseInput => ({
    id: input.id,
    channel: plan.channel,
    model: input.model,
    body: input.body,
    previousResponseId: input.previousResponseId,
    upstreamPreviousId: input.upstreamPreviousId,
  });
  const done = (plan: ResponseChannelPlan, r: Awaited<ReturnType<ReturnType<typeof submitStep>>>) =>
    'closed' in r ? null : { plan, upstreamId: r.upstreamId };
  const plans = input.channels;
  for (let i = 0; i < plans.length - 1; i++) {
    const plan = plans[i] as ResponseChannelPlan;
    let delayMs = input.retryInitialMs;
    let stay = false;
    for (let n = 1; n <= plan.submitAttempts; n++) {
      try {
        return done(plan, await submitStep(input, 1)(request(plan)));
      } catch (err) {
        const attempt = attemptOf(err);
        if (attempt.kind === 'final') throw err;
        if (attempt.kind === 'unknown') {
          stay = true;
          break;
        }
        if (n < plan.submitAttempts) await sleep(Math.max(delayMs, attempt.retryAfterMs));
        delayMs = Math.min(delayMs * 2, input.retryMaxMs);
      }
    }
    if (stay) return done(plan, await submitStep(input)(request(plan)));
  }
  const last = plans[plans.length - 1];
  if (!last) throw ApplicationFailure.nonRetryable('No channel serves the model.', FAILURE_TYPES.noChannel);
  return done(last, await submitStep(input)(request(last)));
}

export async function backgroundResponseWorkflow(input: BackgroundResponseInput): Promise<{ status: string }> {
  let usage: TextUsage | null = null;
  let end: ResponseEnd | null = null;
  let upstreamTook = false;
  try {
    // Refused (the response fails, nothing is created) when its hold was released before it started.
    await claimCharge({ taskId: input.id });
    const accepted = await submitFailingOver(input);
    if (accepted === null) {
      end = { status: 'cancelled' };
    } else {
      upstreamTook = true;
      upsertSearchAttributes([{ key: SA_STATUS, value: 'in_progress' }]);
      const watched: WatchResponseResult = await watchStep(
        accepted.plan,
        input,
      )({
        id: input.id,
        channel: accepted.plan.channel,
        upstreamId: accepted.upstreamId,
        model: input.model,
        previousResponseId: input.previousResponseId,
        pollMs: accepted.plan.pollMs,
        deadline: input.deadline,
      });
      usage = watched.usage;
      if (watched.error) end = { status: 'failed', error: watched.error };
    }
  } catch (err) {
    end = isCancellation(err) ? { status: 'cancelled' } : { status: 'failed', error: errorOf(err) };
    // The upstream may hold it (a create that was taken, a watch cut short): asked to stop, and
    // its answer says what it produced. The record names the upstream id, so the step finds it.
    if (upstreamTook || isCancellation(err)) {
      usage = await CancellationScope.nonCancellable(() => cancelUpstreamResponse({ id: input.id })).catch(() => null);
    }
  }
  // Shielded: a cancelled run must still record its end and settle its hold.
  const closed = await CancellationScope.nonCancellable(() =>
    closeBackgroundResponse({ id: input.id, keyId: input.keyId, requestId: input.requestId, callbackUrl: input.callbackUrl, end, usage }),
  );
  upsertSearchAttributes([{ key: SA_STATUS, value: closed.status }]);
  return closed;
}

/** Why the response failed, from the step failure that ended it. */
function errorOf(err: unknown): { code: string; message: string } {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure) {
    if (cause.type === FAILURE_TYPES.upstreamRejected) return { code: 'upstream_rejected', message: cause.message };
    if (cause.type === FAILURE_TYPES.chargeNotLive) return { code: 'charge_refunded', message: cause.message };
    if (cause.type === FAILURE_TYPES.noChannel) return { code: 'no_channel', message: cause.message };
    if (cause.type === RESPONSE_TIMEOUT) return { code: 'timeout', message: cause.message };
    return { code: 'upstream_unavailable', message: cause.message };
  }
  if (cause instanceof TimeoutFailure) return { code: 'timeout', message: 'The response did not finish before its deadline.' };
  return { code: 'upstream_unavailable', message: `The provider could not be reached: ${cause instanceof Error ? cause.message : 'unknown error'}` };
}
