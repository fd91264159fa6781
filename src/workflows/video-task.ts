/**
 * One video task = one workflow (workflow id = public task id).
 * plan channel -> (enhance prompt) -> (create character) -> submit (or remix) -> watch the job in one
 * heartbeating step that also stores the file (progress in its heartbeat details) in gateway storage -> completed. Any terminal failure -> failed with a reason.
 * Cancelled (DELETE /v1/videos/{id} of a running task, or an operator) -> refunded, the provider
 * asked to cancel the job, any stored file removed, failed as `cancelled`, and the run ends as cancelled.
 * Deterministic: all I/O is in activities; state is published as memo + search attributes
 * (readable with no worker running), to the task's view in the store (the `taskViews` sink:
 * status reads with no Temporal call), and answered live by the `state` query.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  continueAsNew,
  defineQuery,
  isCancellation,
  patched,
  proxyActivities,
  proxySinks,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { BillingActivities } from '../billing/charge-activities';
import type { VideoActivities } from '../activities/video-activities';
import { SA_STATUS } from '../temporal/search-attributes';
import { initialState, type TaskError, type TaskFailover, type TaskState } from '../tasks/task';
import type { WebhookActivities } from '../webhooks/activities';
import type { TerminalOutcome } from '../webhooks/event';
import { attemptOf, submitFailingOver, SUBMIT_FAILOVER_PATCH } from './submit-failover';
import { estimateProgress, nextProgress } from './progress';
import { FAILURE_TYPES, STATE_QUERY, type ChannelPlan, type StoredVideoResult, type VideoTaskInput } from './video-task-types';
import { watchHeartbeatTimeoutMs } from './watch-heartbeat';
import { taskViewSeq, type TaskViewSinks } from './task-view-sink';

export const stateQuery = defineQuery<TaskState>(STATE_QUERY);

const { taskViews } = proxySinks<TaskViewSinks>();

const NON_RETRYABLE = Object.values(FAILURE_TYPES);

export const { planChannel } = proxyLocalActivities<VideoActivities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '500ms', maximumAttempts: 5, nonRetryableErrorTypes: NON_RETRYABLE },
});

/**
 * Settling the task's charge must happen however long the store is away: retried without a
 * limit (the workflow waits for it), each attempt short. A local activity, like the polls: one
 * short, idempotent database transaction, run inside the workflow task instead of costing the
 * server an activity task of its own per paid task.
 */
export const { settleTask, claimCharge } = proxyLocalActivities<BillingActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

/**
 * Workflows started from this version on claim their charge before any work (billing/charge-lifecycle.ts:
 * a task runs only while its charge is live). Runs begun earlier replay without the claim.
 */
export const CHARGE_CLAIM_PATCH = 'charge-claimed-before-work';

/**
 * Workflows started from this version watch their upstream job in one heartbeating step
 * (watchVideoJob) instead of a timer and a poll per interval, so their history does not grow
 * with the job's length. Runs begun earlier replay through the polling loop they recorded.
 */
export const JOB_WATCH_PATCH = 'job-watched-in-one-step';

/**
 * Workflows cancelled from this version on settle their own cancellation: the charge refunded,
 * the provider asked to cancel the job, any stored file removed, the state published as failed
 * (`cancelled`), then the run ends as cancelled. A cancellation that arrives together with the
 * stored file also wins over the completion. Runs cancelled before it replay as they ended (the
 * reconciler refunded them). Only a cancelled run reaches a check of this patch.
 */
export const TASK_CANCEL_PATCH = 'cancel-settled-by-the-task';

/**
 * Workflows from this version on announce their terminal state (completed, failed, cancelled)
 * once it is published: one local activity (one marker in history) that makes the completion
 * webhook event, if the request or its key names a target, and starts its delivery workflow.
 */
export const COMPLETION_WEBHOOK_PATCH = 'completion-webhook';

/**
 * Tasks of videoTaskWorkflowV3 make their submit's first attempt inside their workflow task (a
 * local activity) when it fetches no user URL, the task has no channel to fail over to and its
 * first workflow task did not wait for a worker past the run's limit (firstTryMaxWaitMs): a
 * submit that the provider accepts at once then costs the server no activity task and no second
 * workflow task (a task's history 23 -> 18 events). An attempt that fails goes on as before, as
 * a step of its own that the server retries (and the Web UI shows with its attempts). The cost: a
 * worker lost, or a workflow task timed out, after the provider took the job but before the task
 * was recorded makes the submit again, with the same idempotency key, as after a worker lost
 * mid-step. A task that may fail over keeps every attempt a step: there, an attempt whose outcome
 * is unknown must be seen as such (submit-failover.ts), and a lost workflow task is not.
 */
export const SUBMIT_IN_WORKFLOW_TASK = 'submit-first-attempt-in-workflow-task';

/**
 * For runs whose input has no `firstTryMaxWaitMs` (started before the API set it): a task
 * whose first workflow task waited longer than this for a worker submits as a step from its
 * first attempt. The rule was made for workers with a 10 s sticky queue timeout, under which a
 * burst's first workflow tasks, holding their slots while the provider answered, pushed the
 * workflow tasks of the tasks in flight past that timeout and behind the whole backlog
 * (10,000 tasks in flight: completion lag p99 115 s against 7.7 s). The API now sets the limit
 * (SUBMIT_FIRST_TRY_MAX_WAIT_MS): long enough for a burst the workers are seconds behind, short
 * of one they are minutes behind.
 */
export const FIRST_TASK_PROMPT_MS = 1000;

/** The run's limit on its first workflow task's wait for the submit's first attempt in it. */
function firstTryMaxWaitMs(input: VideoTaskInput): number {
  if (input.firstTryMaxWaitMs === undefined) return FIRST_TASK_PROMPT_MS;
  return input.firstTryMaxWaitMs ?? Number.POSITIVE_INFINITY;
}

/**
 * The announce step: short database writes and a workflow start, retried for up to an hour (a
 * store or Temporal away that long); then the task ends without its event rather than stay open.
 */
const { announceTerminal } = proxyLocalActivities<WebhookActivities>({
  startToCloseTimeout: '30s',
  scheduleToCloseTimeout: '1h',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

/**
 * The provider is asked to cancel a cancelled task's job a few times, briefly: best-effort, so
 * an unreachable provider delays the end of the run by a minute at most, never the refund (made first).
 */
const { cancelUpstreamJob } = proxyActivities<VideoActivities>({
  startToCloseTimeout: '20s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 3, nonRetryableErrorTypes: NON_RETRYABLE },
});

/** One file removal, in the workflow task like the settle step. */
const { removeStoredVideo } = proxyLocalActivities<VideoActivities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '500ms', maximumAttempts: 5 },
});

/** How long an upstream step may go without a heartbeat before the server retries it elsewhere. */
const STEP_HEARTBEAT_TIMEOUT = '15s';

/**
 * The backoff of upstream retries comes from the worker's configuration through the plan
 * (recorded in history, so replay sees the same).
 */
function upstreamRetry(plan: ChannelPlan) {
  return { initialInterval: plan.retryInitialMs, backoffCoefficient: 2, maximumInterval: plan.retryMaxMs, nonRetryableErrorTypes: NON_RETRYABLE };
}

/** Activity stubs with explicit timeouts. */
export function upstreamActivities(plan: ChannelPlan) {
  const retry = upstreamRetry(plan);
  return {
    // Stubs are proxies with no own keys, so each is picked by name rather than spread.
    // The upstream steps heartbeat (activities/video-activities.ts): a worker that dies
    // mid-step is noticed after STEP_HEARTBEAT_TIMEOUT, not after the whole start-to-close.
    ...pick(
      proxyActivities<VideoActivities>({ startToCloseTimeout: '90s', heartbeatTimeout: STEP_HEARTBEAT_TIMEOUT, retry: { ...retry, maximumAttempts: 4 } }),
      'enhancePrompt',
    ),
    ...pick(
      proxyActivities<VideoActivities>({ startToCloseTimeout: '3m', heartbeatTimeout: STEP_HEARTBEAT_TIMEOUT, scheduleToCloseTimeout: '1h', retry }),
      'submitVideo',
      'submitRemix',
      'createCharacter',
      'storeProfilePicture',
    ),
    // The poll and download steps of runs begun before JOB_WATCH_PATCH (watchVideoJob does
    // both now). Polls are short GETs: as local activities they run inside the workflow task.
    // A provider outage longer than 2 h fails the task rather than polling forever.
    ...pick(proxyLocalActivities<VideoActivities>({ startToCloseTimeout: '30s', scheduleToCloseTimeout: '2h', retry }), 'pollVideo'),
    ...pick(
      proxyActivities<VideoActivities>({
        startToCloseTimeout: '15m',
        heartbeatTimeout: '45s',
        scheduleToCloseTimeout: '2h',
        retry: { ...retry, maximumAttempts: 20 },
      }),
      'storeVideo',
    ),
  };
}

/** The options of one submit attempt that nothing retries: its caller decides what comes next. */
function oneAttempt(plan: ChannelPlan) {
  return { startToCloseTimeout: '3m' as const, retry: { ...upstreamRetry(plan), maximumAttempts: 1 } };
}

/** One submit attempt as a step: a channel that can fail over paces its own attempts (submit-failover.ts). */
function submitOnce(plan: ChannelPlan) {
  return proxyActivities<VideoActivities>({ ...oneAttempt(plan), heartbeatTimeout: STEP_HEARTBEAT_TIMEOUT }).submitVideo;
}

/**
 * A submit's first attempt as a local activity (SUBMIT_IN_WORKFLOW_TASK); what fails goes on as a
 * step of its own. A local activity cannot heartbeat: the workflow task it runs in is kept alive
 * by the worker instead, and a lost worker is noticed at the task's timeout.
 */
function submitInWorkflowTask(plan: ChannelPlan) {
  return proxyLocalActivities<VideoActivities>(oneAttempt(plan));
}

/**
 * The watching step lasts as long as the job may: until the task's deadline. It heartbeats
 * after its polls (each at most the upstream poll timeout, 20 s) and while it downloads, so a
 * worker that died is noticed within its heartbeat timeout (two poll intervals and half a
 * minute, or a quarter of a long job's expected length: watch-heartbeat.ts), and another attempt
 * resumes from its last heartbeat. Transient upstream errors are retried inside the step; what
 * escapes it is retried by the server until the deadline.
 */
function jobWatcher(plan: ChannelPlan, deadline: number) {
  const lifetimeMs = Math.max(60_000, deadline - Date.now() + 60_000);
  return proxyActivities<VideoActivities>({
    startToCloseTimeout: lifetimeMs,
    scheduleToCloseTimeout: lifetimeMs,
    heartbeatTimeout: watchHeartbeatTimeoutMs(plan),
    retry: upstreamRetry(plan),
  }).watchVideoJob;
}

function pick<T extends object, K extends keyof T>(source: T, ...keys: K[]): Pick<T, K> {
  const out = {} as Pick<T, K>;
  for (const k of keys) out[k] = source[k];
  return out;
}

/** Task deadline from submit to a stored file, when the request carries none. */
const DEFAULT_DEADLINE_MS = 3 * 60 * 60 * 1000;

/** Whether a run takes the code path of a patch (Temporal's `patched`, or always). */
type PatchCheck = (patchId: string) => boolean;

/**
 * The task's first workflow type: runs begun before videoTaskWorkflowV2 replay through it,
 * each patch decided by the marker its history holds.
 */
export async function videoTaskWorkflow(input: VideoTaskInput): Promise<TaskState> {
  return runVideoTask(input, (patchId) => patchId !== SUBMIT_IN_WORKFLOW_TASK && patched(patchId));
}

/**
 * The task's workflow type for every run started now: the same code with every patch above
 * taken, and no patch markers. Each `patched()` call writes a marker and an upsert of the
 * `TemporalChangeVersion` search attribute (a visibility write on the server), three per task
 * in the first type; a type of its own takes the new paths without asking its history.
 */
export async function videoTaskWorkflowV2(input: VideoTaskInput): Promise<TaskState> {
  return runVideoTask(input, (patchId) => patchId !== SUBMIT_IN_WORKFLOW_TASK);
}

/**
 * The task's workflow type for every run started now: V2's code with the submit's first attempt
 * in the first workflow task (SUBMIT_IN_WORKFLOW_TASK). Runs begun as V2 replay through V2.
 */
export async function videoTaskWorkflowV3(input: VideoTaskInput): Promise<TaskState> {
  return runVideoTask(input, () => true);
}

async function runVideoTask(input: VideoTaskInput, takes: PatchCheck): Promise<TaskState> {
  const { request } = input;
  // How long the first workflow task waited for a worker (both times are the server's, so replay agrees).
  const firstTaskWaitMs = Date.now() - workflowInfo().startTime.getTime();
  let state: TaskState = input.resume?.state ?? initialState(request);
  setHandler(stateQuery, () => state);

  let published = 0;
  const publish = (patch: Partial<TaskState>): void => {
    const statusChanged = patch.status !== undefined && patch.status !== state.status;
    state = { ...state, ...patch };
    if (statusChanged) {
      state.statusUpdateTime = Math.floor(Date.now() / 1000);
      upsertSearchAttributes([{ key: SA_STATUS, value: state.status }]);
    }
    upsertMemo({ state });
    taskViews.publish(state, taskViewSeq(workflowInfo().runStartTime, ++published));
  };

  try {
    let plan: ChannelPlan;
    let jobId: string;
    let submittedAt: number;
    if (input.resume) {
      ({ plan, jobId, submittedAt } = input.resume);
    } else {
      // Refused (the task fails, nothing is submitted) when its charge was refunded before it started.
      if (takes(CHARGE_CLAIM_PATCH)) await claimCharge({ taskId: request.taskId });
      // A remix, or a cast of existing characters, must run where its source lives.
      const { fallbacks = [], ...planned } = await planChannel({ model: request.model, channel: request.remixOf?.channel ?? request.cast?.channel });
      plan = planned;
      const { enhancePrompt, createCharacter, submitVideo, submitRemix } = upstreamActivities(plan);
      let prompt = request.prompt;
      if (request.enhancePrompt) {
        prompt = await enhancePrompt({ prompt: request.prompt }).catch(() => request.prompt);
        publish({ enhancedPrompt: prompt });
      }
      const characterIds: string[] = [];
      if (request.character) {
        const character = await createCharacter({ taskId: request.taskId, ownerId: request.ownerId, channel: plan.channel, source: request.character });
        characterIds.push(character.id);
      }
      // The first attempt in the workflow task, unless the submit fetches a user's URL (a slow host,
      // a busy key's fetch slots) or its first workflow task waited past the run's limit for a worker.
      const here =
        takes(SUBMIT_IN_WORKFLOW_TASK) &&
        firstTaskWaitMs <= firstTryMaxWaitMs(input) &&
        request.images.every((image) => image.kind === 'stored') &&
        submitInWorkflowTask(plan);
      if (request.remixOf) jobId = await firstTryThenStep(here && here.submitRemix, submitRemix, { request, plan, prompt }, plan);
      // A task with no other channel to go to submits as it always did (and records no marker).
      // One that makes its own character stays where the character lives.
      else if (fallbacks.length > 0 && !request.character && takes(SUBMIT_FAILOVER_PATCH)) {
        // Every attempt a step of its own: a worker lost mid-step is an unknown outcome that keeps
        // the task on its channel, where a lost workflow task would make its attempt again unseen.
        const steps = { once: submitOnce, patiently: (p: ChannelPlan) => upstreamActivities(p).submitVideo };
        const failedOver = (f: TaskFailover) => publish({ failovers: [...(state.failovers ?? []), f] });
        ({ plan, jobId } = await submitFailingOver(plan, fallbacks, { request, prompt, characterIds }, steps, failedOver));
      } else jobId = await firstTryThenStep(here && here.submitVideo, submitVideo, { request, plan, prompt, characterIds }, plan);
      submittedAt = Date.now();
      publish({ upstream: { channel: plan.channel, jobId } });
    }

    const { pollVideo, storeVideo } = upstreamActivities(plan);
    const deadline = request.createdAt + (request.deadlineMs ?? DEFAULT_DEADLINE_MS);
    const timedOut = () => ApplicationFailure.nonRetryable('The task did not finish before its deadline.', 'TaskTimeout');
    const completed = async ({ chargeSettled, ...video }: StoredVideoResult): Promise<TaskState> => {
      // The file arrived with the task's cancellation: the cancellation wins (its owner deleted it).
      if (CancellationScope.current().consideredCancelled && takes(TASK_CANCEL_PATCH)) {
        throw new CancelledFailure('The task was cancelled as its video was stored.');
      }
      // Settled before the status shows: a client that reads "completed" reads a final balance.
      // The download step settles it when it can reach the store (and histories from before
      // it did carry no chargeSettled, so they replay through the settle step).
      if (!chargeSettled) await settleTask({ taskId: request.taskId, outcome: 'completed' });
      publish({ status: 'completed', progress: 100, video });
      await announce('completed');
      return state;
    };

    if (takes(JOB_WATCH_PATCH)) {
      const watched = await jobWatcher(
        plan,
        deadline,
      )({
        taskId: request.taskId,
        channel: plan.channel,
        jobId,
        pollMs: plan.pollMs,
        expectedJobMs: plan.expectedJobMs,
        submittedAt,
        deadline,
        from: { status: state.status === 'processing' ? 'processing' : 'pending', progress: state.progress },
      });
      // Where a step still has to run (a settle that the download step could not make), the memo
      // first catches up with the heartbeats, or reads would go back to where it was. The short
      // timer ends this workflow task, so the memo reaches the server before the settle step,
      // which runs (and may retry for long) inside the next one.
      if (watched.phase !== 'stored' || !watched.video.chargeSettled) {
        publish({ status: watched.last.status === 'processing' ? 'processing' : state.status, progress: Math.max(state.progress, watched.last.progress) });
        await sleep(1);
      }
      if (watched.phase === 'failed') return await fail(watched.error);
      if (watched.phase === 'timeout') throw timedOut();
      return await completed(watched.video);
    }

    for (;;) {
      if (Date.now() > deadline) throw timedOut();
      await sleep(plan.pollMs);
      const result = await pollVideo({ channel: plan.channel, jobId });
      if (result.phase === 'failed') return await fail(result.error);
      if (result.phase === 'succeeded') return await completed(await storeVideo({ taskId: request.taskId, channel: plan.channel, download: result.download }));
      const progress = nextProgress(state.progress, result.progress, estimateProgress(Date.now() - submittedAt, plan.expectedJobMs));
      const status = result.phase === 'running' ? 'processing' : state.status;
      if (progress !== state.progress || status !== state.status) publish({ progress, status });
      if (workflowInfo().continueAsNewSuggested) {
        await continueAsNew<typeof videoTaskWorkflow>({ request, resume: { state, plan, jobId, submittedAt } });
      }
    }
  } catch (err) {
    if (isCancellation(err) && CancellationScope.current().consideredCancelled && takes(TASK_CANCEL_PATCH)) {
      // Shielded: the steps of a cancelled run must still run, and the refund whatever else fails.
      await CancellationScope.nonCancellable(cancelled);
      throw err;
    }
    const error = taskErrorOf(err);
    if (!error) throw err;
    return await fail(error);
  }

  /**
   * A cancelled task: refunded first (an in-flight download step then finds the charge refunded
   * and discards its file itself), then the provider asked to stop the job, then whatever file was
   * already stored removed. The provider's and the file's steps may fail: the run ends all the same.
   */
  async function cancelled(): Promise<void> {
    await settleTask({ taskId: request.taskId, outcome: 'cancelled' });
    const upstream = state.upstream;
    if (upstream) await cancelUpstreamJob({ channel: upstream.channel, jobId: upstream.jobId }).catch(() => undefined);
    await removeStoredVideo({ taskId: request.taskId }).catch(() => undefined);
    // Neutral: a charge that a completion settled in the same moment stands (charge-lifecycle.ts).
    publish({ status: 'failed', error: { code: 'cancelled', message: 'The task was cancelled before it finished.' } });
    await announce('cancelled');
  }

  /** Refunded before the status shows, so "failed" is read together with its refund. */
  async function fail(error: TaskError): Promise<TaskState> {
    await settleTask({ taskId: request.taskId, outcome: 'failed', reason: error.message, code: error.code });
    publish({ status: 'failed', error });
    await announce('failed');
    return state;
  }

  /** After the terminal state is published: its completion webhook, if any (never fails the task). */
  async function announce(outcome: TerminalOutcome): Promise<void> {
    if (!takes(COMPLETION_WEBHOOK_PATCH)) return;
    await announceTerminal({ subject: 'video', id: request.taskId, keyId: request.ownerId, callbackUrl: request.callbackUrl, outcome, state }).catch(
      () => undefined,
    );
  }
}

/**
 * The submit: its first attempt in the workflow task when `firstTry` is given, then, if that
 * failed in a way another attempt may mend, as a step of its own (retried by the server), no
 * sooner than the channel's first retry interval or the provider's Retry-After. A rejection or a
 * cancellation ends it.
 */
async function firstTryThenStep<I>(
  firstTry: ((input: I) => Promise<string>) | false,
  step: (input: I) => Promise<string>,
  input: I,
  plan: ChannelPlan,
): Promise<string> {
  if (!firstTry) return step(input);
  try {
    return await firstTry(input);
  } catch (err) {
    const attempt = attemptOf(err);
    if (attempt.kind === 'final') throw err;
    await sleep(Math.max(plan.retryInitialMs, attempt.kind === 'not_accepted' ? attempt.retryAfterMs : 0));
    return step(input);
  }
}

/** The reason a task failed, from the activity failure that ended it; null for anything else (cancellation, continue-as-new). */
function taskErrorOf(err: unknown): TaskError | null {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure) {
    const code =
      cause.type === FAILURE_TYPES.upstreamRejected
        ? 'upstream_rejected'
        : cause.type === FAILURE_TYPES.inputRejected
          ? 'invalid_input'
          : cause.type === FAILURE_TYPES.noChannel
            ? 'no_channel'
            : cause.type === FAILURE_TYPES.chargeNotLive
              ? 'charge_refunded'
              : cause.type === 'TaskTimeout'
                ? 'timeout'
                : 'upstream_unavailable';
    return { code, message: cause.message };
  }
  if (err instanceof ActivityFailure) {
    // Retries exhausted or the activity timed out: the provider stayed unreachable.
    return { code: 'upstream_unavailable', message: `The provider could not be reached: ${cause instanceof Error ? cause.message : 'timeout'}` };
  }
  return null;
}
