/**
 * Starts task workflows and reads their state. Every Temporal call has a deadline, so a
 * missing server becomes a 503 in seconds and a missing worker never hangs a status read.
 *
 * A read first asks the store, in one query, for the task's deletion mark and its view
 * (task-views.ts): a task its owner deleted is not read at all, so a delete answered by any
 * replica holds on every replica from then on, cached or not; and a view whose lease holds (its
 * job is being watched) or whose state is terminal answers alone, with no Temporal call.
 * Otherwise the server answers, in one describe: the workflow's memo, which the workflow
 * rewrites in the same workflow task as every change of state, overlaid with the heartbeat
 * details of the step that watches the upstream job (its progress: see watchVideoJob) and with
 * what the view last showed, so progress never goes back. No worker is involved and no history
 * replayed, so tasks read the same with every worker down; closed runs are also cached, since
 * they never change.
 */
import {
  Client,
  isGrpcServiceError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdReusePolicy,
  WorkflowNotFoundError,
  type Connection,
  type ConnectionLike,
  type WorkflowClientInterceptor,
  type WorkflowExecutionDescription,
  type WorkflowStartOptions,
} from '@temporalio/client';
import { SA_MODEL, SA_OWNER, SA_STATUS } from '../temporal/search-attributes';
import type { temporal } from '@temporalio/proto';
import type { PayloadConverter } from '@temporalio/common';
import { WATCH_JOB_ACTIVITY, type VideoTaskInput } from '../workflows/video-task-types';
import { videoTaskWorkflowV3 } from '../workflows/video-task';
import { backgroundResponseWorkflow } from '../workflows/background-response';
import type { BackgroundResponseInput } from '../workflows/background-response-types';
import { initialState, isTerminal, type TaskRequest, type TaskState } from './task';
import { TaskServiceUnavailable, TaskStoreUnavailable } from './task-errors';
import { withJobProgress } from './job-progress';
import { lastWatchedProgress } from './task-timeline';
import { unawaitedViewWrite, type TaskView, type TaskViews } from './task-views';
import { metrics } from '../metrics/metrics';

/** The start options every paid run shares (TaskService.startRun). */
type RunStartOptions = Pick<WorkflowStartOptions, 'taskQueue' | 'workflowId' | 'typedSearchAttributes' | 'workflowIdReusePolicy' | 'requestEagerStart'>;

export interface TaskServiceOptions {
  namespace: string;
  taskQueue: string;
  rpcTimeoutMs: number;
  /** The client's workflow interceptors: Temporal's tracing ones when tracing is on (telemetry/temporal-tracing.ts). */
  interceptors?: WorkflowClientInterceptor[];
  /**
   * The NativeConnection of a worker of `taskQueue` in this process (`npm start` with
   * TEMPORAL_EAGER_START), if there is one. Runs are then started on it with eager start: the
   * server answers the start with the run's first workflow task, which goes straight to that
   * worker, instead of putting it on the task queue for a poll to pick up. When the local worker
   * has no free slot (or is being replaced), the server dispatches the task as usual.
   */
  localWorker?: ConnectionLike;
  /**
   * Each task's VideoTaskInput.firstTryMaxWaitMs (SUBMIT_FIRST_TRY_MAX_WAIT_MS); null: no limit.
   * Required, as an input without it means the first V3 runs' 1 s rule.
   */
  firstTryMaxWaitMs: number | null;
}

/** A page of runs stopped from outside (TaskService.stoppedBetween), newest close first. */
export interface StoppedPage {
  ids: string[];
  /** The close of the page's last (oldest) run; null for an empty page. */
  oldestClose: Date | null;
  /** Older runs of the same window are left for another page. */
  more: boolean;
}

const CLOSED_CACHE_MAX = 20_000;

/**
 * The most events a run has before its first workflow task completes: started, workflow task
 * scheduled, workflow task started. Only a completed workflow task changes a memo. A run with
 * more events (a failed workflow task, a signal beside the first) is not taken as untouched,
 * which costs its reads only a describe each.
 */
const UNTOUCHED_HISTORY_LENGTH = 3;

export class TaskService {
  readonly client: Client;
  /** Starts runs: on the local worker's connection with eager start, or `client`. */
  private readonly starter: { client: Client; connection: ConnectionLike; eager: boolean };
  private readonly closed = new Map<string, TaskState>();

  constructor(
    readonly connection: Connection,
    private readonly opts: TaskServiceOptions,
    /** The store's deletion marks and task views; null where there is no store (the workflow tests), where no task is ever deleted. */
    private readonly views: Pick<TaskViews, 'look' | 'publish' | 'renewInitial'> | null,
  ) {
    const clientOf = (on: ConnectionLike) =>
      new Client({ connection: on, namespace: opts.namespace, ...(opts.interceptors ? { interceptors: { workflow: opts.interceptors } } : {}) });
    this.client = clientOf(connection);
    this.starter = opts.localWorker
      ? { client: clientOf(opts.localWorker), connection: opts.localWorker, eager: true }
      : { client: this.client, connection, eager: false };
  }

  /** One Temporal call under the API's deadline, on the client's connection or `on`. */
  private rpc<T>(fn: () => Promise<T>, on: ConnectionLike = this.connection): Promise<T> {
    return on.withDeadline(Date.now() + this.opts.rpcTimeoutMs, fn);
  }

  async start(request: TaskRequest): Promise<TaskState> {
    const state = initialState(request);
    const input: VideoTaskInput = { request, firstTryMaxWaitMs: this.opts.firstTryMaxWaitMs };
    await this.startRun({ id: request.taskId, model: request.model, owner: request.ownerId, status: state.status }, (options) =>
      this.starter.client.workflow.start(videoTaskWorkflowV3, { ...options, args: [input], memo: { state } }),
    );
    // Not awaited: the create does not wait for it, and until it lands (or if it fails) reads ask Temporal.
    if (this.views) unawaitedViewWrite('api', this.views.publish(state, 0));
    return state;
  }

  /**
   * Starts a background response's workflow (workflow id = the response id), with the search
   * attributes of a task so operators find it the same way in the Temporal UI.
   */
  async startResponse(input: BackgroundResponseInput): Promise<void> {
    await this.startRun({ id: input.id, model: input.model, owner: input.keyId, status: 'queued' }, (options) =>
      this.starter.client.workflow.start(backgroundResponseWorkflow, { ...options, args: [input] }),
    );
  }

  /**
   * One paid run's start, given the options every run shares: its id, once (a second start of
   * the id is refused with WorkflowExecutionAlreadyStartedError, passed on as is), and the search
   * attributes operators filter by. Any other failure is a start failure (startFailure).
   */
  private async startRun(
    run: { id: string; model: string; owner: string; status: string },
    start: (options: RunStartOptions) => Promise<{ eagerlyStarted: boolean }>,
  ): Promise<void> {
    const options: RunStartOptions = {
      taskQueue: this.opts.taskQueue,
      workflowId: run.id,
      typedSearchAttributes: [
        { key: SA_MODEL, value: run.model },
        { key: SA_OWNER, value: run.owner },
        { key: SA_STATUS, value: run.status },
      ],
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      ...(this.starter.eager ? { requestEagerStart: true } : {}),
    };
    try {
      const { eagerlyStarted } = await this.rpc(() => start(options), this.starter.connection);
      metrics.workflowStarts.inc({ eager: String(eagerlyStarted) });
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) throw err;
      throw startFailure(err);
    }
  }

  /** The task's state, or null when it does not exist, belongs to another key or was deleted. */
  async get(id: string, ownerId: string): Promise<TaskState | null> {
    const { deleted, view } = await this.look(id);
    if (deleted) {
      this.closed.delete(id);
      return null;
    }
    const state = await this.read(id, view);
    return state && state.ownerId === ownerId ? state : null;
  }

  private async look(id: string): ReturnType<TaskViews['look']> {
    if (!this.views) return { deleted: false, view: null };
    try {
      return await this.views.look(id);
    } catch (err) {
      // Not read rather than read without its mark: a task its owner deleted is never shown.
      throw new TaskStoreUnavailable(
        `The task store did not answer (${err instanceof Error ? err.message.split('\n')[0] : 'unknown error'}). Retry in a few seconds.`,
      );
    }
  }

  /**
   * Asks Temporal to cancel the task's workflow (the workflow refunds the task, tells the provider
   * and ends as cancelled: workflows/video-task.ts). 'closed' when the workflow had already ended,
   * so there is nothing to cancel.
   */
  async cancel(id: string): Promise<'requested' | 'closed'> {
    try {
      await this.rpc(() => this.client.workflow.getHandle(id).cancel());
      return 'requested';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return 'closed';
      throw unavailable(err);
    }
  }

  /**
   * Deletes a closed task's workflow execution from Temporal, best-effort: retention removes it
   * anyway, and reads no longer depend on it (the store's mark answers them). Temporal deletes it
   * asynchronously.
   */
  /**
   * The events of the task's workflow (its latest run), read from the server: no worker needed.
   * Call it for a task the caller owns (get() first).
   */
  async history(id: string): Promise<temporal.api.history.v1.IHistoryEvent[]> {
    try {
      const history = await this.rpc(() => this.client.workflow.getHandle(id).fetchHistory());
      return history.events ?? [];
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return [];
      throw unavailable(err);
    }
  }

  /** Decodes what the history's payloads carry (step results, search attributes). */
  get payloadConverter(): PayloadConverter {
    return this.client.options.loadedDataConverter.payloadConverter;
  }

  async deleteExecution(id: string): Promise<void> {
    this.closed.delete(id);
    await this.rpc(() => this.connection.workflowService.deleteWorkflowExecution({ namespace: this.opts.namespace, workflowExecution: { workflowId: id } }));
  }

  private async read(id: string, view: TaskView | null): Promise<TaskState | null> {
    const closed = this.closed.get(id);
    if (closed) {
      metrics.taskReads.inc({ source: 'closed' });
      return closed;
    }
    if (view?.fresh) {
      metrics.taskReads.inc({ source: 'view' });
      return view.state;
    }
    metrics.taskReads.inc({ source: 'temporal' });
    const { state, untouched } = await this.readMemo(id);
    // Still the state its create published: its view may answer the next reads (TaskViews.renewInitial).
    if (view && untouched && this.views) unawaitedViewWrite('api', this.views.renewInitial(id));
    // A view past its lease may still be ahead of the server (a last heartbeat its worker did not send).
    return state && view ? withJobProgress(state, { status: view.state.status, progress: view.state.progress }) : state;
  }

  /**
   * The task's state from one describe (null: no such task), and whether its run is untouched:
   * running with no workflow task completed, so its state is still the one it was started with.
   */
  private async readMemo(id: string): Promise<{ state: TaskState | null; untouched: boolean }> {
    let description;
    try {
      description = await this.rpc(() => this.client.workflow.getHandle(id).describe());
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return { state: null, untouched: false };
      throw unavailable(err);
    }
    const memoState = description.memo?.state as TaskState | undefined;
    if (!memoState) return { state: null, untouched: false };
    const untouched = description.status.name === 'RUNNING' && description.historyLength <= UNTOUCHED_HISTORY_LENGTH;
    return { state: await this.stateOf(id, memoState, description), untouched };
  }

  /** A run's state from its describe: the memo, with the watched job's progress while it runs, or its end once closed. */
  private async stateOf(id: string, memoState: TaskState, description: WorkflowExecutionDescription): Promise<TaskState> {
    const status = description.status.name;
    if (status === 'RUNNING' || status === 'CONTINUED_AS_NEW') {
      const converter = this.client.options.loadedDataConverter.payloadConverter;
      const watch = description.raw.pendingActivities?.find((a) => a.activityType?.name === WATCH_JOB_ACTIVITY);
      const details = watch?.heartbeatDetails?.payloads?.[0];
      if (details) return withJobProgress(memoState, converter.fromPayload(details));
      // The watching step has ended and the workflow task that publishes its outcome has not run
      // yet: for a moment, or for as long as no worker runs. The memo is behind what reads showed
      // while the step ran; the step's result in the history says where the job was last seen.
      if (!watch && description.raw.pendingWorkflowTask && memoState.upstream && !isTerminal(memoState.status)) {
        const page = await this.rpc(() =>
          this.connection.workflowService.getWorkflowExecutionHistoryReverse({
            namespace: this.opts.namespace,
            execution: { workflowId: id },
            maximumPageSize: 10,
          }),
        );
        return withJobProgress(memoState, lastWatchedProgress(page.history?.events ?? [], converter));
      }
      return memoState;
    }
    // Closed: the memo holds the final state, unless the run was stopped from outside.
    const state: TaskState = isTerminal(memoState.status)
      ? memoState
      : {
          ...memoState,
          status: 'failed',
          statusUpdateTime: Math.floor((description.closeTime?.getTime() ?? Date.now()) / 1000),
          error: { code: 'aborted', message: `The task's workflow ended as ${status.toLowerCase()}.` },
        };
    this.remember(id, state);
    return state;
  }

  /**
   * Where a task's workflow stands, for billing's reconciler: never started, still running,
   * or closed as completed / failed (a run stopped from outside counts as failed).
   */
  async outcome(id: string): Promise<'missing' | 'running' | 'completed' | 'failed'> {
    let description;
    try {
      description = await this.rpc(() => this.client.workflow.getHandle(id).describe());
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return 'missing';
      throw unavailable(err);
    }
    const status = description.status.name;
    if (status === 'RUNNING' || status === 'CONTINUED_AS_NEW') return 'running';
    if (status !== 'COMPLETED') return 'failed';
    // A video task's memo holds its state (a failed task still completes its workflow);
    // a character's workflow completes only when the character was made.
    const memoState = description.memo?.state as TaskState | undefined;
    return memoState && memoState.status !== 'completed' ? 'failed' : 'completed';
  }

  /**
   * One page of the gateway's workflows (those of its task queue) that closed without finishing
   * (terminated, timed out, cancelled or failed) after `from` and before `before` (none: up to
   * now), newest close first, at most `limit`: runs stopped from outside never reach their own
   * settle step, so the billing reconciler refunds them. One visibility query; `more` says older
   * runs of the window are left, `oldestClose` where this page ended, so the next page asks
   * before it. Another application's workflows in the same namespace are not the gateway's to
   * settle: listed, a mass stop of theirs would crowd out its own.
   */
  async stoppedBetween(from: Date, before: Date | null, limit: number): Promise<StoppedPage> {
    const query =
      `TaskQueue = "${this.opts.taskQueue}" AND ExecutionStatus IN ("Terminated", "TimedOut", "Canceled", "Failed")` +
      ` AND CloseTime > "${from.toISOString()}"` +
      (before ? ` AND CloseTime < "${before.toISOString()}"` : '');
    return this.rpc(async () => {
      const page: StoppedPage = { ids: [], oldestClose: null, more: false };
      // One more than the limit, in the same page: whether older runs are left, without a second call.
      for await (const run of this.client.workflow.list({ query, pageSize: limit + 1 })) {
        if (page.ids.length === limit) {
          page.more = true;
          break;
        }
        page.ids.push(run.workflowId);
        page.oldestClose = run.closeTime ?? page.oldestClose;
      }
      return page;
    });
  }

  private remember(id: string, state: TaskState): void {
    if (this.closed.size >= CLOSED_CACHE_MAX) this.closed.delete(this.closed.keys().next().value ?? '');
    this.closed.set(id, state);
  }
}

function unavailableMessage(err: unknown): string {
  const detail = err instanceof Error ? err.message.split('\n')[0] : 'unknown error';
  return `The task service is unavailable (Temporal did not answer: ${detail}). Retry in a few seconds.`;
}

function unavailable(err: unknown): TaskServiceUnavailable {
  return new TaskServiceUnavailable(unavailableMessage(err));
}

/**
 * Whether Temporal itself answered the failed call (a refusal), rather than not answering at all
 * (unreachable, past the deadline): only an answer says the workflow does not exist.
 */
export function temporalAnswered(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (isGrpcServiceError(e)) return !NO_ANSWER_CODES.includes(e.code);
  }
  return false;
}

/** gRPC status codes of a call that got no answer: CANCELLED, UNKNOWN, DEADLINE_EXCEEDED, UNAVAILABLE. */
const NO_ANSWER_CODES: readonly number[] = [1, 2, 4, 14];

/** The failure of a start; marked when Temporal never answered it (see startUnanswered). */
export function startFailure(err: unknown, message = unavailableMessage(err)): TaskServiceUnavailable {
  return new TaskServiceUnavailable(message, !temporalAnswered(err));
}

/** A start that Temporal never answered: whether its workflow exists is unknown. */
export function startUnanswered(err: unknown): boolean {
  return err instanceof TaskServiceUnavailable && err.unanswered;
}
