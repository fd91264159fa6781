/**
 * Background responses (`background: true`) as durable runs: the API side of the port
 * (background-port.ts). A create holds the response's worst-case price as a paid-task charge,
 * records the response (queued) and starts its workflow (workflows/background-response.ts),
 * which creates it upstream, watches it and settles the hold from the reported usage. Reads
 * return the record, which the run keeps current: no worker, no Temporal call. Cancel and delete
 * cancel the run, which asks the provider to stop and bills what it says was produced.
 */
import { needsResponsesOutputCap, textCeiling } from '../billing/text-ceiling';
import type { PriceTable } from '../billing/prices';
import { DEFAULT_SUBMIT_ATTEMPTS } from '../config/channels';
import { isTerminalStatus } from '../providers/openai-responses/schemas';
import type { ResponseStore, StoredResponse } from '../store/responses';
import type { PaidTasks } from '../tasks/paid-tasks';
import type { TaskService } from '../tasks/task-service';
import type { BackgroundResponseInput } from '../workflows/background-response-types';
import type { BackgroundCreate, BackgroundResponses } from './background-port';

export interface BackgroundServiceDeps {
  tasks: Pick<TaskService, 'startResponse' | 'cancel'>;
  paid: Pick<PaidTasks, 'startCharged'>;
  store: ResponseStore;
  prices: PriceTable;
  /** The output tokens held for (and sent upstream as max_output_tokens by) a request that names no limit. */
  defaultMaxTokens: number;
  /** How long a response may run before it is cancelled upstream and fails as timed out (TASK_DEADLINE_MINUTES). */
  deadlineMs: number;
  /** The backoff of create attempts (UPSTREAM_RETRY_*). */
  retryInitialMs: number;
  retryMaxMs: number;
}

/** A channel's poll interval and create attempts when it sets none (channels made outside the loader). */
const DEFAULT_POLL_MS = 2000;

/** The error code of a record whose run could not be started. */
const NOT_STARTED = 'not_started';

/** Request fields a Response object repeats (OpenAI's shape), shown from the first, queued state on. */
const ECHOED = [
  'instructions',
  'max_output_tokens',
  'max_tool_calls',
  'metadata',
  'parallel_tool_calls',
  'reasoning',
  'service_tier',
  'temperature',
  'text',
  'tool_choice',
  'tools',
  'top_p',
  'truncation',
  'user',
] as const;

/** The response as its create answers it: queued, with what the request set. */
export function queuedResponse(request: BackgroundCreate, body: Record<string, unknown>, createdAt: number): Record<string, unknown> {
  const echoed: Record<string, unknown> = {};
  for (const field of ECHOED) if (body[field] !== undefined) echoed[field] = body[field];
  return {
    id: request.id,
    object: 'response',
    created_at: createdAt,
    status: 'queued',
    background: true,
    model: request.model,
    output: [],
    usage: null,
    error: null,
    incomplete_details: null,
    previous_response_id: typeof body.previous_response_id === 'string' ? body.previous_response_id : null,
    store: true,
    ...echoed,
  };
}

export class BackgroundResponseService implements BackgroundResponses {
  constructor(private readonly deps: BackgroundServiceDeps) {}

  async create(request: BackgroundCreate): Promise<Record<string, unknown>> {
    const { deps } = this;
    // The hold needs a bound on the output: a request that names none gets the gateway's cap, sent upstream.
    const body = needsResponsesOutputCap(request.body) ? { ...request.body, max_output_tokens: deps.defaultMaxTokens } : request.body;
    const ceiling = textCeiling(
      deps.prices,
      request.model,
      { endpoint: 'responses', body, bodyBytes: Buffer.byteLength(JSON.stringify(body)), contextTokens: request.contextTokens },
      deps.defaultMaxTokens,
    );
    const queued = queuedResponse(request, body, Math.floor(Date.now() / 1000));
    const first = request.channels[0];
    if (!first) throw new Error('a background response needs a channel');
    const { previous_response_id: previousResponseId, ...upstreamBody } = body;
    const input: BackgroundResponseInput = {
      id: request.id,
      keyId: request.keyId,
      requestId: request.requestId,
      model: request.model,
      channels: request.channels.map((c) => ({
        channel: c.name,
        pollMs: c.pollMs ?? DEFAULT_POLL_MS,
        submitAttempts: c.submitAttempts ?? DEFAULT_SUBMIT_ATTEMPTS,
      })),
      body: upstreamBody,
      previousResponseId: typeof previousResponseId === 'string' ? previousResponseId : null,
      upstreamPreviousId: request.upstreamPreviousId,
      ...(request.callbackUrl ? { callbackUrl: request.callbackUrl } : {}),
      deadline: Date.now() + deps.deadlineMs,
      retryInitialMs: deps.retryInitialMs,
      retryMaxMs: deps.retryMaxMs,
    };
    await deps.paid.startCharged({ keyId: request.keyId, taskId: request.id, kind: 'response', model: request.model, amount: ceiling.credits }, async () => {
      // Recorded before its run starts: the run reads it, and an immediate GET finds it.
      await deps.store.insert({
        id: request.id,
        keyId: request.keyId,
        model: request.model,
        channel: first.name,
        upstreamId: null,
        background: true,
        status: 'queued',
        response: queued,
      });
      try {
        await deps.tasks.startResponse(input);
      } catch (err) {
        await deps.store
          .finish(request.id, { ...queued, status: 'failed', error: { code: NOT_STARTED, message: 'The response could not be started.' } })
          .catch(() => undefined);
        throw err;
      }
    });
    return queued;
  }

  neverStarted(stored: StoredResponse): boolean {
    const error = stored.response?.error;
    return stored.status === 'failed' && typeof error === 'object' && error !== null && 'code' in error && error.code === NOT_STARTED;
  }

  async retrieve(stored: StoredResponse): Promise<Record<string, unknown>> {
    return stored.response ?? { id: stored.id, object: 'response', status: stored.status, model: stored.model, background: true, output: [] };
  }

  /**
   * The run is cancelled first (a Temporal that cannot be reached is a 503 and nothing changes),
   * then the record ends as cancelled unless the run ended it first; the answer is the record.
   */
  async cancel(stored: StoredResponse): Promise<Record<string, unknown>> {
    if (isTerminalStatus(stored.status)) return this.retrieve(stored);
    await this.deps.tasks.cancel(stored.id);
    const ended = await this.deps.store.finish(stored.id, { ...(await this.retrieve(stored)), status: 'cancelled' });
    return ended ? this.retrieve(ended) : this.retrieve(stored);
  }

  /** A running one's run is cancelled (it deletes the upstream copy as it closes); a finished one is the caller's to delete upstream. */
  async deleted(stored: StoredResponse): Promise<StoredResponse | null> {
    if (isTerminalStatus(stored.status)) return stored;
    if ((await this.deps.tasks.cancel(stored.id)) === 'requested') return null;
    // Its run ended meanwhile (perhaps before the mark): as it ended, with where it lives upstream.
    return this.deps.store.byId(stored.id);
  }
}
