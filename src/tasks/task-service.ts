/**
 * Starts task workflows and reads their state. Every Temporal call has a deadline, so a
 * missing server becomes a 503 in seconds and a missing worker never hangs a status read.
 *
 * Reads come from the workflow's memo, which the workflow rewrites in the same workflow
 * task as every change of state, so a describe returns what a query would, in one server
 * round trip, with no worker involved and no history replayed (closed tasks are also
 * cached, since they never change). STATUS_SOURCE=query makes running tasks answer the
 * `state` query first (deadline STATUS_QUERY_TIMEOUT_MS, NOT_OPEN so a closed task is
 * refused instead of replayed), falling back to the memo when no worker answers in time;
 * bench:video measures both.
 */
import {
  Client,
  isGrpcServiceError,
  QueryRejectedError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdReusePolicy,
  WorkflowNotFoundError,
  type Connection,
} from '@temporalio/client';
import { SA_MODEL, SA_OWNER, SA_STATUS } from '../temporal/search-attributes';
import { STATE_QUERY, type VideoTaskInput } from '../workflows/video-task-types';
import { videoTaskWorkflow } from '../workflows/video-task';
import { initialState, isTerminal, type TaskRequest, type TaskState } from './task';
import { TaskServiceUnavailable } from './task-errors';

export interface TaskServiceOptions {
  namespace: string;
  taskQueue: string;
  rpcTimeoutMs: number;
  queryTimeoutMs: number;
  source: 'memo' | 'query';
}

const CLOSED_CACHE_MAX = 20_000;
/** After a query times out (no worker), skip queries this long and read memos. */
const WORKER_DOWN_BACKOFF_MS = 5_000;

export class TaskService {
  readonly client: Client;
  private readonly closed = new Map<string, TaskState>();
  private queriesPausedUntil = 0;

  constructor(
    readonly connection: Connection,
    private readonly opts: TaskServiceOptions,
  ) {
    this.client = new Client({ connection, namespace: opts.namespace, workflow: { queryRejectCondition: 'NOT_OPEN' } });
  }

  private rpc<T>(fn: () => Promise<T>, timeoutMs = this.opts.rpcTimeoutMs): Promise<T> {
    return this.connection.withDeadline(Date.now() + timeoutMs, fn);
  }

  async start(request: TaskRequest): Promise<TaskState> {
    const state = initialState(request);
    const input: VideoTaskInput = { request };
    try {
      await this.rpc(() =>
        this.client.workflow.start(videoTaskWorkflow, {
          taskQueue: this.opts.taskQueue,
          workflowId: request.taskId,
          args: [input],
          memo: { state },
          typedSearchAttributes: [
            { key: SA_MODEL, value: request.model },
            { key: SA_OWNER, value: request.ownerId },
            { key: SA_STATUS, value: state.status },
          ],
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        }),
      );
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) throw err;
      throw startFailure(err);
    }
    return state;
  }

  /** The task's state, or null when it does not exist or belongs to another key. */
  async get(id: string, ownerId: string): Promise<TaskState | null> {
    const state = await this.read(id);
    return state && state.ownerId === ownerId ? state : null;
  }

  private async read(id: string): Promise<TaskState | null> {
    const cached = this.closed.get(id);
    if (cached) return cached;
    const handle = this.client.workflow.getHandle(id);
    if (this.opts.source === 'query' && Date.now() >= this.queriesPausedUntil) {
      try {
        return await this.rpc(() => handle.query<TaskState>(STATE_QUERY), this.opts.queryTimeoutMs);
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return null;
        if (!(err instanceof QueryRejectedError)) this.queriesPausedUntil = Date.now() + WORKER_DOWN_BACKOFF_MS;
      }
    }
    return this.readMemo(id);
  }

  private async readMemo(id: string): Promise<TaskState | null> {
    let description;
    try {
      description = await this.rpc(() => this.client.workflow.getHandle(id).describe());
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return null;
      throw unavailable(err);
    }
    const memoState = description.memo?.state as TaskState | undefined;
    if (!memoState) return null;
    const status = description.status.name;
    if (status === 'RUNNING' || status === 'CONTINUED_AS_NEW') return memoState;
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
   * Workflows that closed without finishing (terminated, timed out, cancelled or failed) after
   * `since`, at most `limit`: runs stopped from outside never reach their own settle step. One
   * visibility query, so the billing reconciler can refund them within a pass.
   */
  async stoppedSince(since: Date, limit: number): Promise<string[]> {
    const query = `ExecutionStatus IN ("Terminated", "TimedOut", "Canceled", "Failed") AND CloseTime > "${since.toISOString()}"`;
    return this.rpc(async () => {
      const ids: string[] = [];
      for await (const run of this.client.workflow.list({ query, pageSize: limit })) {
        ids.push(run.workflowId);
        if (ids.length >= limit) break;
      }
      return ids;
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
