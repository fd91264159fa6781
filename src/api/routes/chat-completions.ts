import { PassThrough } from 'node:stream';
import Router from '@koa/router';
import { WebhookStore } from '../../store/webhooks';
import { checkedCallbackUrl } from '../callback-url';
import { findVideoModel } from '../../catalog/models';
import { newTaskId } from '../../catalog/task-id';
import { watchTask } from '../../tasks/watch';
import { isTerminal, type TaskState } from '../../tasks/task';
import { castFromPrompt } from '../character-mentions';
import { channelCheck } from '../channel-check';
import { callerKey, type GatewayState } from '../context';
import { InvalidRequestError } from '../errors';
import { jsonBody } from '../middleware/json-body';
import { chatVideoBody, promptOf } from '../schemas/chat-video';
import { chatTextBody } from '../schemas/chat-text';
import { isNativeTextModel, isResponsesOnlyModel, RESPONSES_API_HINT } from '../../catalog/text-models';
import { chatProtocol } from '../../providers/openai-compatible/protocol';
import { metrics, secondsSince } from '../../metrics/metrics';
import { answerFromUpstream, takeStreamSlot, textChannelsFor, type TextRouteDeps } from '../text-proxy-route';
import type { ParameterizedContext } from 'koa';
import { parseOrThrow } from '../schemas/zod-error';
import { needsOutputCap } from '../../billing/text-ceiling';
import { buildTaskRequest, createTaskOnce } from '../task-request';
import { videoUrlOf } from '../views/video-task';
import { chatChunk, chatCompletion, chatLines, finishReasonOf, type ChunkContext } from '../views/chat-video';
import type { VideoRouteDeps } from './video-tasks';

/** SSE comments keep idle proxies from closing a stream while a video renders. */
const KEEPALIVE_MS = 15_000;

/**
 * Text models: proxied to the OpenAI-compatible channels serving them (streamed or not).
 * The gateway always asks a streamed upstream for usage; the client sees the usage chunk only
 * when it set stream_options.include_usage.
 */
async function answerText(ctx: ParameterizedContext<GatewayState>, deps: TextRouteDeps, model: string): Promise<void> {
  if (isResponsesOnlyModel(model)) {
    throw new InvalidRequestError(`The model '${model}' cannot be used on /v1/chat/completions: ${RESPONSES_API_HINT}.`, 'model', 'model_not_supported');
  }
  if (isNativeTextModel(model)) {
    throw new InvalidRequestError(
      `The model '${model}' is served in its native format: call it with POST /v1/messages (client base URL without /v1).`,
      'model',
      'model_not_supported',
    );
  }
  const body = parseOrThrow(chatTextBody, ctx.request.body);
  const channels = textChannelsFor(deps, chatProtocol, model);
  if (channels.length === 0) {
    const served = [...new Set(deps.textChannels.filter((c) => c.type === 'openai-compatible').flatMap((c) => Object.keys(c.models)))];
    throw new InvalidRequestError(
      `The model '${model}' does not exist or is not served by this gateway. Text models on /v1/chat/completions: ${served.join(', ') || 'none'}; video: motion-2, motion-2-pro.`,
      'model',
      'model_not_found',
    );
  }
  // The hold needs a bound on the output: a request that names none gets the gateway's cap.
  const capped = needsOutputCap(body);
  await answerFromUpstream(ctx, deps, {
    protocol: chatProtocol,
    channels,
    endpoint: 'chat',
    model,
    body: capped ? { ...body, max_completion_tokens: deps.textLimits.defaultMaxTokens } : body,
    rawIsBody: !capped,
    stream: body.stream === true,
    clientWantsUsage: body.stream_options?.include_usage === true,
    passthroughHeaders: {},
  });
}

/**
 * POST /v1/chat/completions: text models are proxied (answerText); motion models (spec 4.10, 6)
 * become video tasks: stream: true sends chat.completion.chunk events as the task moves; stream: false answers once the task ends
 * with the same lines as one message. Either way a client that leaves ends only its own
 * response: the task runs on and stays readable by id.
 */
export function chatCompletionsRoutes(deps: VideoRouteDeps & TextRouteDeps): Router<GatewayState> {
  const router = new Router<GatewayState>();
  const requireChannel = channelCheck(deps.channels);
  const webhooks = new WebhookStore(deps.db);

  router.post('/v1/chat/completions', jsonBody(deps.config.env.MAX_JSON_BODY_BYTES), async (ctx) => {
    const requested = (ctx.request.body as { model?: unknown } | null)?.model;
    if (typeof requested === 'string' && !findVideoModel(requested)) {
      await answerText(ctx, deps, requested);
      return;
    }
    const body = parseOrThrow(chatVideoBody, ctx.request.body);
    const model = findVideoModel(body.model);
    if (!model || model.family !== 'motion') {
      const hint = model ? ` Video model '${model.id}' is served on ${model.endpoints.includes('videos') ? 'POST /v1/videos' : 'POST /v1/video/create'}.` : '';
      throw new InvalidRequestError(`The model '${body.model}' is not available on /v1/chat/completions.${hint}`, 'model', 'model_not_found');
    }
    requireChannel(model.id);
    const ownerId = callerKey(ctx.state).id;
    // The answer stays open until the task ends, streamed or not: it counts as one of the key's streams.
    ctx.res.once('close', takeStreamSlot(deps.streams, ownerId));
    const prompt = promptOf(body);
    const callbackUrl = await checkedCallbackUrl(body.callback_url, ownerId, deps.config.env, webhooks);
    const started = await createTaskOnce(ctx, deps, {
      fingerprint: ['POST /v1/chat/completions', ctx.request.body],
      newTaskId: () => newTaskId(model.id),
      create: async (taskId) => {
        const request = buildTaskRequest(deps.config, {
          taskId,
          ownerId,
          model,
          endpoint: 'chat',
          prompt,
          images: [],
          size: '720x1280',
          seconds: model.durations?.[0],
          cast: await castFromPrompt(prompt, ownerId, deps.characters),
          callbackUrl,
        });
        const state = await deps.paid.start(request);
        ctx.state.log.info({ taskId, model: model.id, stream: body.stream === true }, 'task created');
        return state;
      },
    });

    const chunk: ChunkContext = { id: `chatcmpl-${started.id.replace(/[^a-z0-9]/gi, '')}`, created: started.createdAt, model: model.id };
    const abort = new AbortController();
    // The response's close (not the request's: that fires once the body is read) means the
    // client is gone or the answer is complete; either way the watcher can stop.
    ctx.res.once('close', () => abort.abort());
    const read = () => deps.tasks.get(started.id, ownerId);
    const linesFor = (state: TaskState, previous: TaskState | null): string[] => {
      const lines: string[] = [];
      if (state.progress > (previous?.progress ?? 0)) lines.push(chatLines.progress(state.progress));
      if (state.status === 'completed') lines.push(chatLines.videoUrl(videoUrlOf(state, deps.signer) ?? ''));
      if (state.status === 'failed') lines.push(chatLines.failed(state));
      return lines;
    };

    // The watch ended with the task neither finished nor the client gone: the task was deleted (DELETE /v1/videos/{id}).
    const vanished = (final: TaskState | null) => !abort.signal.aborted && (final === null || !isTerminal(final.status));

    if (body.stream !== true) {
      let previous: TaskState | null = null;
      const lines = [chatLines.taskId(started.id)];
      const final = await watchTask(
        read,
        (state) => {
          lines.push(...linesFor(state, previous));
          previous = state;
        },
        { everyMs: deps.config.env.STREAM_POLL_MS, signal: abort.signal },
      );
      if (vanished(final)) lines.push(chatLines.deleted());
      ctx.body = chatCompletion(chunk, lines.join(''), final ? finishReasonOf(final) : 'stop');
      return;
    }

    const stream = new PassThrough();
    const send = (payload: unknown) => {
      if (!stream.writableEnded) stream.write(`data: ${JSON.stringify(payload)}\n\n`);
    };
    ctx.status = 200;
    ctx.set({ 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no', connection: 'keep-alive' });
    ctx.body = stream;
    send(chatChunk(chunk, { role: 'assistant', content: chatLines.taskId(started.id) }));
    metrics.streamFirstByte.observe({ endpoint: 'video_chat' }, secondsSince(ctx.state.receivedAt));
    const keepalive = setInterval(() => stream.write(': keep-alive\n\n'), KEEPALIVE_MS);

    void (async () => {
      let previous: TaskState | null = null;
      try {
        const final = await watchTask(
          read,
          (state) => {
            for (const content of linesFor(state, previous)) send(chatChunk(chunk, { content }));
            previous = state;
          },
          { everyMs: deps.config.env.STREAM_POLL_MS, signal: abort.signal },
        );
        if (vanished(final)) send(chatChunk(chunk, { content: chatLines.deleted() }));
        if (!abort.signal.aborted) send(chatChunk(chunk, {}, final ? finishReasonOf(final) : 'stop'));
      } catch (err) {
        // A read failed mid-stream (Temporal unreachable): say so in the stream, then end it.
        ctx.state.log.warn({ err: (err as Error).message, taskId: started.id }, 'stream ended early');
        send({
          error: {
            message: `The task status could not be read; the task continues: read it with GET /v1/videos/${started.id}.`,
            type: 'server_error',
            param: null,
            code: 'stream_interrupted',
          },
        });
      } finally {
        clearInterval(keepalive);
        if (!stream.writableEnded) stream.end('data: [DONE]\n\n');
      }
    })();
  });

  return router;
}
