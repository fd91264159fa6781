import Router from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { findVideoModel } from '../../catalog/models';
import { isNativeTextModel } from '../../catalog/text-models';
import type { TextChannel } from '../../config/channels';
import { needsResponsesOutputCap } from '../../billing/text-ceiling';
import { UpstreamError } from '../../providers/http';
import { responsesClient, type ResponsesClient } from '../../providers/openai-responses/client';
import { storedIds, toClientResponse } from '../../providers/openai-responses/mapping';
import { protocolForRequest, responsesProtocol } from '../../providers/openai-responses/protocol';
import { isTerminalStatus, responseStatus, responseUsage } from '../../providers/openai-responses/schemas';
import type { BackgroundResponses } from '../../responses/background-port';
import { newResponseId, type ResponseStore, type StoredResponse } from '../../store/responses';
import type { Env } from '../../config/env';
import type { WebhookStore } from '../../store/webhooks';
import { checkedCallbackUrl } from '../callback-url';
import { callerKey, type GatewayState } from '../context';
import { GatewayError, InvalidRequestError, NotFoundError } from '../errors';
import { idempotentCreate, type IdempotencyDeps } from '../idempotency';
import { CREATE_LEASE_SECONDS } from '../task-request';
import { jsonBody } from '../middleware/json-body';
import { responsesBody, type ResponsesBody } from '../schemas/responses';
import { parseOrThrow } from '../schemas/zod-error';
import { answerFromUpstream, takeStreamSlot, textChannelsFor, type TextRouteDeps } from '../text-proxy-route';
import { streamRecord } from './response-record-stream';

export interface ResponsesRouteDeps extends TextRouteDeps, IdempotencyDeps {
  config: { env: Env };
  /** Where callback_url's signing secret is looked up. */
  webhooks: WebhookStore;
  responses: ResponseStore;
  /** Runs `background: true` responses (durable workflows); absent = they are refused. */
  backgroundResponses?: BackgroundResponses;
}

type Ctx = ParameterizedContext<GatewayState>;

function notFound(id: string): NotFoundError {
  return new NotFoundError(`No response with id '${id}' was found.`, 'response_id');
}

/** An upstream failure of a retrieve, cancel or delete, as the client hears it. */
function fromUpstream(err: unknown, id: string): unknown {
  if (!(err instanceof UpstreamError)) return err;
  if (err.status === 404) return notFound(id);
  if (err.kind === 'rejected' && err.status !== undefined) return new GatewayError(err.status, 'invalid_request_error', err.message, null, 'upstream_rejected');
  return new GatewayError(502, 'server_error', `The upstream provider could not answer: ${err.message}`, null, 'upstream_failed');
}

/** The channels to send a new response to: the ones serving the model, or the one holding the response it continues. */
async function channelsForRequest(
  deps: ResponsesRouteDeps,
  body: ResponsesBody,
  keyId: string,
): Promise<{ channels: TextChannel[]; previous: StoredResponse | null }> {
  const model = body.model;
  if (isNativeTextModel(model)) {
    throw new InvalidRequestError(`The model '${model}' is served in its native format: call it with POST /v1/messages.`, 'model', 'model_not_supported');
  }
  if (findVideoModel(model)) {
    throw new InvalidRequestError(`'${model}' is a video model: create it with POST /v1/videos or POST /v1/video/create.`, 'model', 'model_not_supported');
  }
  const serving = textChannelsFor(deps, responsesProtocol, model);
  if (serving.length === 0) {
    const served = [...new Set(deps.textChannels.filter((c) => c.type === responsesProtocol.channelType).flatMap((c) => Object.keys(c.models)))];
    throw new InvalidRequestError(
      `The model '${model}' is not served on /v1/responses by this gateway. Models on /v1/responses: ${served.join(', ') || 'none'}.`,
      'model',
      'model_not_found',
    );
  }
  if (!body.previous_response_id) return { channels: serving, previous: null };
  const previous = await deps.responses.get(body.previous_response_id, keyId);
  if (!previous) {
    throw new InvalidRequestError(`Previous response with id '${body.previous_response_id}' not found.`, 'previous_response_id', 'previous_response_not_found');
  }
  if (previous.upstreamId === null) {
    throw new InvalidRequestError(
      `Previous response '${previous.id}' has not started yet; retry once it has.`,
      'previous_response_id',
      'previous_response_not_ready',
    );
  }
  // The conversation lives on the provider that holds the previous response: only that channel can continue it.
  const pinned = serving.filter((c) => c.name === previous.channel);
  if (pinned.length === 0) {
    throw new InvalidRequestError(
      `Previous response '${previous.id}' is held by channel '${previous.channel}', which does not serve '${model}' (any more).`,
      'previous_response_id',
      'previous_response_unavailable',
    );
  }
  return { channels: pinned, previous };
}

/**
 * What continuing `previous` adds to a request's input upstream: its input and output (the
 * provider replays the conversation). Its usage when known; a bound from its size otherwise.
 */
function contextTokensOf(previous: StoredResponse): number {
  const usage = responseUsage.safeParse(previous.response?.usage);
  if (usage.success) return usage.data.input_tokens + usage.data.output_tokens;
  return Buffer.byteLength(JSON.stringify(previous.response ?? {}));
}

async function create(ctx: Ctx, deps: ResponsesRouteDeps): Promise<void> {
  const body = parseOrThrow(responsesBody, ctx.request.body);
  if (body.input === undefined && !body.previous_response_id) {
    throw new InvalidRequestError("Missing required parameter: 'input'.", 'input', 'missing_required_parameter');
  }
  const key = callerKey(ctx.state);
  if (body.callback_url !== undefined && body.background !== true) {
    throw new InvalidRequestError(
      'callback_url is for background responses (background: true): a foreground answer is the response itself.',
      'callback_url',
      'invalid_value',
    );
  }
  const { channels, previous } = await channelsForRequest(deps, body, key.id);
  const upstreamPreviousId = previous?.upstreamId ?? null;

  if (body.background === true) {
    if (body.store === false) throw new InvalidRequestError('Background responses must be stored: store cannot be false.', 'store', 'invalid_value');
    const background = deps.backgroundResponses;
    if (!background) throw new InvalidRequestError('background responses are not enabled on this gateway.', 'background', 'background_not_enabled');
    const callbackUrl = await checkedCallbackUrl(body.callback_url, key.id, deps.config.env, deps.webhooks);
    const { stream: _stream, callback_url: _callbackUrl, ...rest } = body;
    // Over the key's streams it is refused before anything is charged or started.
    if (body.stream === true) takeStreamSlot(deps.streams, key.id)();
    // Under an Idempotency-Key a repeat (a client's retry after a lost answer) gets the response
    // the first made, charged once; streaming or not does not make two requests different.
    const created = await idempotentCreate(ctx, deps, {
      fingerprint: { endpoint: 'responses', body: rest, callbackUrl: body.callback_url ?? null },
      fresh: () => ({ taskId: newResponseId() }),
      leaseSeconds: CREATE_LEASE_SECONDS,
      existing: async (ids) => {
        const stored = await deps.responses.get(ids.taskId, key.id);
        // A create whose run never started made nothing to answer: the repeat makes it anew.
        return stored && !background.neverStarted(stored) ? { id: stored.id, response: await background.retrieve(stored) } : null;
      },
      create: async (ids) => ({
        id: ids.taskId,
        response: await background.create({
          id: ids.taskId,
          keyId: key.id,
          requestId: ctx.state.requestId,
          model: body.model,
          channels,
          body: rest,
          upstreamPreviousId,
          contextTokens: previous ? contextTokensOf(previous) : 0,
          ...(callbackUrl ? { callbackUrl } : {}),
        }),
      }),
    });
    if (body.stream === true) streamStored(ctx, deps, created.id, key.id, -1);
    else ctx.body = created.response;
    return;
  }

  const id = newResponseId();
  const { protocol, outcome } = protocolForRequest({ ids: { id, previousResponseId: previous?.id ?? null }, upstreamPreviousId, model: body.model });
  // The hold needs a bound on the output: a request that names none gets the gateway's cap.
  const capped = needsResponsesOutputCap(body);
  await answerFromUpstream(ctx, deps, {
    protocol,
    channels,
    endpoint: 'responses',
    model: body.model,
    body: capped ? { ...body, max_output_tokens: deps.textLimits.defaultMaxTokens } : body,
    rawIsBody: false,
    contextTokens: previous ? contextTokensOf(previous) : 0,
    stream: body.stream === true,
    clientWantsUsage: true,
    passthroughHeaders: {},
    onAnswer: async (channel) => {
      const answer = outcome();
      // store: false is OpenAI's "do not keep it": nothing to read back, nothing to continue.
      if (body.store === false || !answer.upstreamId || !answer.response) return;
      await deps.responses.insert({
        id,
        keyId: key.id,
        model: body.model,
        channel: channel.name,
        upstreamId: answer.upstreamId,
        background: false,
        status: answer.response.status,
        response: answer.response,
      });
    },
  });
}

function clientFor(deps: ResponsesRouteDeps, stored: StoredResponse): { channel: TextChannel; client: ResponsesClient } | null {
  const channel = deps.textChannels.find((c) => c.name === stored.channel && c.type === responsesProtocol.channelType);
  if (!channel) return null;
  const timeoutMs = deps.textLimits.timeoutMs;
  return { channel, client: responsesClient(channel, { requestMs: timeoutMs, pollMs: timeoutMs }) };
}

/** The response as it is now: the stored object once it is final, else a fresh read from its channel. */
async function current(deps: ResponsesRouteDeps, stored: StoredResponse): Promise<Record<string, unknown>> {
  const status = responseStatus.safeParse(stored.response?.status);
  if (stored.response && status.success && isTerminalStatus(status.data)) return stored.response;
  const upstream = clientFor(deps, stored);
  if (!upstream || stored.upstreamId === null) {
    if (stored.response) return stored.response;
    throw notFound(stored.id);
  }
  const fresh = toClientResponse(await upstream.client.retrieve(stored.upstreamId), storedIds(stored), stored.model);
  await deps.responses.update(stored.id, { status: fresh.status, response: fresh });
  return fresh;
}

/**
 * The response's events from its record (route file response-record-stream.ts): a background one
 * followed as its run updates it, a foreground one as it is stored (read afresh while it runs).
 */
function streamStored(ctx: Ctx, deps: ResponsesRouteDeps, id: string, keyId: string, startingAfter: number): void {
  streamRecord(ctx, {
    keyId,
    startingAfter,
    everyMs: deps.config.env.STREAM_POLL_MS,
    streams: deps.streams,
    read: async () => {
      const stored = await deps.responses.get(id, keyId);
      if (!stored) return null;
      return stored.background ? stored.response : await current(deps, stored);
    },
  });
}

/** GET's `starting_after`: a sequence number (events after it are sent), or -1 for all. */
function startingAfterOf(ctx: Ctx): number {
  const raw = ctx.query.starting_after;
  if (raw === undefined) return -1;
  if (typeof raw !== 'string' || !/^\d{1,9}$/.test(raw)) {
    throw new InvalidRequestError('starting_after must be a sequence number (a non-negative integer).', 'starting_after', 'invalid_value');
  }
  return Number(raw);
}

async function owned(ctx: Ctx, deps: ResponsesRouteDeps): Promise<StoredResponse> {
  const id = ctx.params.id ?? '';
  const stored = await deps.responses.get(id, callerKey(ctx.state).id);
  if (!stored) throw notFound(id);
  return stored;
}

/**
 * POST /v1/responses (OpenAI's Responses API) to the `openai-responses` channels serving the
 * model: plain or streamed through the text proxy (holds, billing from the reported usage,
 * failover before the first byte), with the gateway's own response id; `background: true`
 * goes to the background port. GET, cancel and DELETE by id, for the key that created it.
 */
export function responsesRoutes(deps: ResponsesRouteDeps): Router<GatewayState> {
  const router = new Router<GatewayState>();
  const background = deps.backgroundResponses;

  router.post('/v1/responses', jsonBody(deps.config.env.MAX_JSON_BODY_BYTES), (ctx) => create(ctx, deps));

  router.get('/v1/responses/:id', async (ctx) => {
    const stored = await owned(ctx, deps);
    const stream = ctx.query.stream;
    if (stream !== undefined && stream !== 'true' && stream !== 'false') {
      throw new InvalidRequestError('stream must be true or false.', 'stream', 'invalid_value');
    }
    if (stream === 'true') {
      streamStored(ctx, deps, stored.id, stored.keyId, startingAfterOf(ctx));
      return;
    }
    try {
      ctx.body = stored.background && background ? await background.retrieve(stored) : await current(deps, stored);
    } catch (err) {
      throw fromUpstream(err, stored.id);
    }
  });

  router.post('/v1/responses/:id/cancel', async (ctx) => {
    const stored = await owned(ctx, deps);
    if (!stored.background) {
      throw new InvalidRequestError('Only responses created with background: true can be cancelled.', 'response_id', 'not_cancellable');
    }
    if (!background) throw new InvalidRequestError('background responses are not enabled on this gateway.', 'background', 'background_not_enabled');
    try {
      ctx.body = await background.cancel(stored);
    } catch (err) {
      throw fromUpstream(err, stored.id);
    }
  });

  router.delete('/v1/responses/:id', async (ctx) => {
    const stored = await owned(ctx, deps);
    if (!(await deps.responses.markDeleted(stored.id, stored.keyId))) throw notFound(stored.id);
    ctx.body = { id: stored.id, object: 'response', deleted: true };
    // The provider's copy goes too, after the answer: the client's deletion is done either way.
    // A background response's run is stopped first; a running one's run deletes the copy itself.
    const log = ctx.state.log;
    const removal = async (): Promise<void> => {
      const record = stored.background ? await (background?.deleted(stored) ?? null) : stored;
      const upstream = record && clientFor(deps, record);
      if (upstream && record.upstreamId !== null) await upstream.client.delete(record.upstreamId);
    };
    void removal().catch((err: unknown) => log.warn({ err: (err as Error).message, channel: stored.channel }, 'upstream delete of a response failed'));
  });

  return router;
}
