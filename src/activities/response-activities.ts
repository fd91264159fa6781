/**
 * The steps of a background response (workflows/background-response.ts): create it upstream,
 * watch it to its end, ask the provider to cancel it, and close it (its end recorded, its hold
 * settled, its completion webhook announced). Every step keeps the response's record in the
 * store current, which is what GET /v1/responses/{id} returns: reads need no worker.
 * No prompt or output is logged.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Logger } from 'pino';
import type { BillingStore, ResponseUsageRecord } from '../billing/ledger';
import { textUsagePrice, type PriceTable } from '../billing/prices';
import type { TextChannel } from '../config/channels';
import { UpstreamError } from '../providers/http';
import { responsesClient, type ResponsesClient, type ResponsesClientTimeouts } from '../providers/openai-responses/client';
import { storedIds, toClientResponse, toTextUsage } from '../providers/openai-responses/mapping';
import { isTerminalStatus, type ResponseObject, type ResponseStatus } from '../providers/openai-responses/schemas';
import type { TextUsage } from '../providers/usage';
import type { ResponseStore, StoredResponse } from '../store/responses';
import type { AnnounceInput, AnnounceResult } from '../webhooks/announce-types';
import type { TerminalOutcome } from '../webhooks/event';
import {
  RESPONSE_TIMEOUT,
  type CloseResponseInput,
  type SubmitResponseInput,
  type SubmitResponseResult,
  type WatchResponseInput,
  type WatchResponseResult,
} from '../workflows/background-response-types';
import { FAILURE_TYPES } from '../workflows/video-task-types';
import { asFailure, asSubmitFailure, heartbeating, mapErrors } from './video-activities';
import { sleepUnlessCancelled } from '../system/abortable-sleep';
import { HeartbeatPacer } from './heartbeat-pacer';
import { onPollGrid, pollGridStep } from './poll-grid';

export interface ResponseActivityDeps {
  store: ResponseStore;
  billing: Pick<BillingStore, 'settleResponse'>;
  prices: PriceTable;
  /** The `openai-responses` channels this worker can reach. */
  channels: readonly TextChannel[];
  timeouts: ResponsesClientTimeouts;
  /** The completion webhook's announce (webhooks/activities.ts). */
  announce: (input: AnnounceInput) => Promise<AnnounceResult>;
  logger: Logger;
  /** Polls fall on a grid of this many ms, shared with the video jobs' (poll-grid.ts); 0: off. */
  pollGridMs: number;
}

/** How long a close waits for the upstream delete of a response deleted while it ran. */
const UPSTREAM_DELETE_WAIT_MS = 10_000;

/** Close attempts that may fail on the webhook's announce (Temporal away) before the close gives the event up: about half an hour. */
const ANNOUNCE_ATTEMPTS = 30;

function outcomeOf(status: ResponseStatus): TerminalOutcome {
  return status === 'queued' || status === 'in_progress' ? 'failed' : status;
}

/** How a usage record names a response's end. */
function usageOutcome(status: ResponseStatus): ResponseUsageRecord['outcome'] {
  if (status === 'completed' || status === 'incomplete') return 'completed';
  return status === 'cancelled' ? 'aborted' : 'failed';
}

export function createResponseActivities(deps: ResponseActivityDeps) {
  const { store } = deps;
  const channelOf = (name: string): TextChannel => {
    const channel = deps.channels.find((c) => c.name === name);
    if (!channel) throw ApplicationFailure.nonRetryable(`No responses channel named '${name}' on this worker.`, FAILURE_TYPES.noChannel);
    return channel;
  };
  const clients = new Map<string, ResponsesClient>();
  const clientOf = (name: string): ResponsesClient => {
    let client = clients.get(name);
    if (!client) clients.set(name, (client = responsesClient(channelOf(name), deps.timeouts)));
    return client;
  };
  const recordOf = async (id: string): Promise<StoredResponse & { deleted: boolean }> => {
    const record = await store.byId(id);
    if (!record) throw ApplicationFailure.nonRetryable(`The response ${id} has no record.`, FAILURE_TYPES.inputRejected);
    return record;
  };

  return {
    /**
     * One create: under the Idempotency-Key `<id>:create`, so a retry after a lost answer finds
     * the same upstream response where the provider honours it. A response closed before it went
     * upstream (cancelled, deleted) is not created.
     */
    async submitBackgroundResponse(input: SubmitResponseInput): Promise<SubmitResponseResult> {
      const record = await recordOf(input.id);
      if (record.deleted || isTerminalStatus(record.status)) return { closed: true };
      // An earlier attempt was taken and recorded, its answer lost on the way to the workflow.
      if (record.upstreamId !== null && record.channel === input.channel) return { upstreamId: record.upstreamId };
      const client = clientOf(input.channel);
      const body: Record<string, unknown> = {
        ...input.body,
        model: channelOf(input.channel).models[input.model] ?? input.model,
        background: true,
        store: true,
        ...(input.upstreamPreviousId ? { previous_response_id: input.upstreamPreviousId } : {}),
      };
      const created = await heartbeating(() => mapErrors(() => client.create(body, { idempotencyKey: `${input.id}:create` }), asSubmitFailure));
      const response = toClientResponse(created, { id: input.id, previousResponseId: input.previousResponseId }, input.model);
      await store.accepted(input.id, input.channel, created.id, response);
      return { upstreamId: created.id };
    },

    /**
     * Polls the upstream response every pollMs until it ends, writing each new status to the
     * record; the upstream's end is written too (the first end written stands: a cancel may have
     * come first). Transient upstream errors are polled through until the deadline.
     *
     * Reads come from the record, so a heartbeat only says the worker is alive and carries the
     * last status for a retried attempt: one per change of status, otherwise one per half
     * heartbeat timeout, not one per poll (each is a write on the Temporal server, and a long
     * response would cost it one per poll interval).
     */
    async watchBackgroundResponse(input: WatchResponseInput): Promise<WatchResponseResult> {
      const ctx = Context.current();
      const client = clientOf(input.channel);
      const ids = { id: input.id, previousResponseId: input.previousResponseId };
      let last = (ctx.info.heartbeatDetails as { status?: ResponseStatus } | undefined)?.status ?? null;
      const heartbeats = new HeartbeatPacer<{ status: ResponseStatus | null }>(ctx, input.pollMs);
      const beatIfStale = () => {
        if (heartbeats.isStale()) heartbeats.send({ status: last });
      };
      const gridStep = pollGridStep(deps.pollGridMs, input.pollMs);
      for (;;) {
        await sleepUnlessCancelled(ctx.cancellationSignal, onPollGrid(Date.now() + input.pollMs, gridStep) - Date.now());
        if (Date.now() > input.deadline) throw ApplicationFailure.nonRetryable('The response did not finish before its deadline.', RESPONSE_TIMEOUT);
        let upstream: ResponseObject;
        try {
          upstream = await client.retrieve(input.upstreamId);
        } catch (err) {
          if (err instanceof UpstreamError && err.status === 404) {
            throw ApplicationFailure.nonRetryable('The provider no longer has the response.', FAILURE_TYPES.upstreamRejected);
          }
          if (!(err instanceof UpstreamError) || err.kind === 'rejected') throw asFailure(err);
          beatIfStale();
          continue;
        }
        const response = toClientResponse(upstream, ids, input.model);
        if (isTerminalStatus(upstream.status)) {
          await store.finish(input.id, response);
          const usage = upstream.usage ? toTextUsage(upstream.usage) : null;
          if (upstream.status !== 'failed') return { status: upstream.status, usage };
          const error = { code: upstream.error?.code ?? 'upstream_failed', message: upstream.error?.message ?? 'The provider failed the response.' };
          return { status: upstream.status, usage, error };
        }
        if (upstream.status !== last) {
          await store.progressed(input.id, response);
          last = upstream.status;
          heartbeats.send({ status: last });
        } else beatIfStale();
      }
    },

    /**
     * Asks the provider to cancel the response its record names (nothing when none went
     * upstream); its answer is recorded as the end when the record is still open, and what it
     * says the response produced is returned for billing.
     */
    async cancelUpstreamResponse(input: { id: string }): Promise<TextUsage | null> {
      const record = await recordOf(input.id);
      if (record.upstreamId === null) return null;
      const upstreamId = record.upstreamId;
      let answer: ResponseObject;
      try {
        answer = await mapErrors(() => clientOf(record.channel).cancel(upstreamId));
      } catch (err) {
        // Gone upstream (deleted): nothing to cancel, nothing known of what it produced.
        if (err instanceof ApplicationFailure && err.type === FAILURE_TYPES.upstreamRejected) return null;
        throw err;
      }
      if (isTerminalStatus(answer.status)) await store.finish(input.id, toClientResponse(answer, storedIds(record), record.model));
      return answer.usage ? toTextUsage(answer.usage) : null;
    },

    /**
     * The response's end: recorded (when the upstream's is not already), its hold settled (what
     * it produced billed as a usage record at most the hold, the rest released), then its
     * completion webhook announced. Each part is idempotent, so the step may run again whole.
     */
    async closeBackgroundResponse(input: CloseResponseInput): Promise<{ status: ResponseStatus }> {
      let record: StoredResponse & { deleted?: boolean } = await recordOf(input.id);
      if (!isTerminalStatus(record.status)) {
        const status = input.end?.status ?? 'failed';
        const error = input.end?.error ?? (status === 'failed' ? { code: 'upstream_failed', message: 'The response ended without an answer.' } : null);
        const ended = { ...(record.response ?? {}), status, ...(error ? { error } : {}) };
        record = { ...record, ...(await store.finish(input.id, ended)) };
      }
      // A failed response is refunded in full, whatever the provider counted; any other end bills what it produced.
      const usage: ResponseUsageRecord | null =
        input.usage && record.status !== 'failed'
          ? {
              ...input.usage,
              requestId: input.requestId,
              channel: record.channel,
              outcome: usageOutcome(record.status),
              price: textUsagePrice(deps.prices, record.model, input.usage),
            }
          : null;
      await deps.billing.settleResponse(input.id, usage);
      // Its owner deleted it while it ran: the provider's copy goes too, and nobody is told.
      if (record.deleted) {
        const upstreamId = record.upstreamId;
        if (upstreamId !== null) {
          // Best-effort and bounded: the close (a short local step) never waits on a slow provider.
          const removal = clientOf(record.channel)
            .delete(upstreamId)
            .catch(() => false);
          await Promise.race([removal, new Promise((resolve) => setTimeout(resolve, UPSTREAM_DELETE_WAIT_MS).unref())]);
        }
        return { status: record.status };
      }
      try {
        await deps.announce({
          subject: 'response',
          id: input.id,
          keyId: input.keyId,
          callbackUrl: input.callbackUrl,
          outcome: outcomeOf(record.status),
          data: record.response,
        });
      } catch (err) {
        if (Context.current().info.attempt < ANNOUNCE_ATTEMPTS) throw err;
        deps.logger.error(
          { responseId: input.id, err: (err as Error).message },
          'the completion webhook of a background response could not be announced; given up',
        );
      }
      return { status: record.status };
    },
  };
}

export type ResponseActivities = ReturnType<typeof createResponseActivities>;
