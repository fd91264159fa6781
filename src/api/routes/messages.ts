import Router from '@koa/router';
import type { z } from 'zod';
import { findVideoModel } from '../../catalog/models';
import { isNativeTextModel, isResponsesOnlyModel, NATIVE_TEXT_MODELS, RESPONSES_API_HINT } from '../../catalog/text-models';
import type { TextChannel } from '../../config/channels';
import type { Config } from '../../config/env';
import { countTokensProtocol, messagesProtocol } from '../../providers/anthropic/protocol';
import { chatProtocol } from '../../providers/openai-compatible/protocol';
import type { RateLimiter } from '../../limits/rate-limiter';
import type { KeyStore } from '../../store/keys';
import type { GatewayState } from '../context';
import { InvalidRequestError } from '../errors';
import { anthropicErrors } from '../middleware/anthropic-errors';
import { anyKeyAuth } from '../middleware/auth';
import type { ConsoleAuth } from '../console/cookie-auth';
import { jsonBody } from '../middleware/json-body';
import { countTokensBody, messagesBody } from '../schemas/messages';
import { proxyText } from '../../proxy/text-proxy';
import { parseOrThrow } from '../schemas/zod-error';
import { answerFromUpstream, textChannelsFor, type TextRouteDeps } from '../text-proxy-route';

export interface MessagesRouteDeps extends TextRouteDeps {
  config: Config;
  keys: KeyStore;
  limiter: RateLimiter;
  /** Console session cookies, accepted when no key header is sent. */
  consoleAuth?: ConsoleAuth;
}

/** Which model names /v1/messages refuses, and where each one belongs instead. */
function refuseNonNative(model: string, deps: MessagesRouteDeps): void {
  const where = `/v1/messages serves only the native models ${NATIVE_TEXT_MODELS.join(', ')}`;
  if (isResponsesOnlyModel(model)) {
    throw new InvalidRequestError(`The model '${model}' cannot be used on /v1/messages: ${RESPONSES_API_HINT}.`, 'model', 'model_not_supported');
  }
  if (isNativeTextModel(model)) return;
  const video = findVideoModel(model);
  if (video) {
    throw new InvalidRequestError(
      `'${model}' is a video model: create it with POST /v1/video/create${video.family === 'motion' ? ' or POST /v1/videos' : ''}. ${where}.`,
      'model',
      'model_not_supported',
    );
  }
  if (textChannelsFor(deps, chatProtocol, model).length > 0) {
    throw new InvalidRequestError(
      `The model '${model}' is not a native model: call it with POST /v1/chat/completions (client base URL ${deps.config.publicBaseUrl}/v1). ${where}.`,
      'model',
      'model_not_supported',
    );
  }
  throw new InvalidRequestError(`Unknown model '${model}'. ${where}; other text models are served by POST /v1/chat/completions.`, 'model', 'model_not_found');
}

/**
 * A native request's body, checked against `schema` once its model is known to be native, and
 * the channels that serve that model (400 when none does).
 */
function nativeRequest<T extends { model: string }>(raw: unknown, schema: z.ZodType<T>, deps: MessagesRouteDeps): { body: T; channels: TextChannel[] } {
  const model = raw && typeof raw === 'object' ? (raw as { model?: unknown }).model : undefined;
  if (typeof model === 'string') refuseNonNative(model, deps);
  const body = parseOrThrow(schema, raw);
  const channels = textChannelsFor(deps, messagesProtocol, body.model);
  if (channels.length === 0) {
    throw new InvalidRequestError(`The model '${body.model}' is not available on this gateway: no native channel serves it.`, 'model', 'model_not_available');
  }
  return { body, channels };
}

/**
 * POST /v1/messages (spec 4.11): the native format, proxied to native channels only, with
 * no conversion beyond the compatibility extensions; every error in Anthropic's shape. And
 * POST /v1/messages/count_tokens, with the same checks, free.
 */
export function messagesRoutes(deps: MessagesRouteDeps): Router<GatewayState> {
  const router = new Router<GatewayState>();
  const limit = deps.config.env.MAX_JSON_BODY_BYTES;

  router.post('/v1/messages', anthropicErrors(limit), anyKeyAuth(deps.keys, deps.limiter, deps.consoleAuth), jsonBody(limit), async (ctx) => {
    const { body, channels } = nativeRequest(ctx.request.body, messagesBody, deps);
    const beta = ctx.get('anthropic-beta');
    await answerFromUpstream(ctx, deps, {
      protocol: messagesProtocol,
      channels,
      endpoint: 'messages',
      model: body.model,
      body,
      stream: body.stream === true,
      clientWantsUsage: true,
      passthroughHeaders: beta ? { 'anthropic-beta': beta } : {},
    });
  });

  router.post('/v1/messages/count_tokens', anthropicErrors(limit), anyKeyAuth(deps.keys, deps.limiter, deps.consoleAuth), jsonBody(limit), async (ctx) => {
    const { body, channels } = nativeRequest(ctx.request.body, countTokensBody, deps);
    const beta = ctx.get('anthropic-beta');
    // Through the text proxy like a message (failover, error shapes), but free: no hold, nothing
    // to bill, and no stream to abort if the client leaves.
    const reply = await proxyText(
      {
        protocol: countTokensProtocol,
        channels,
        model: body.model,
        body,
        raw: ctx.state.rawBody ?? Buffer.from(JSON.stringify(body)),
        stream: false,
        clientWantsUsage: false,
        passthroughHeaders: beta ? { 'anthropic-beta': beta } : {},
        signal: new AbortController().signal,
        log: ctx.state.log,
        onUsage: () => Promise.resolve(),
      },
      deps.channelHealth,
      deps.textLimits,
    );
    ctx.status = reply.status;
    ctx.set(reply.headers);
    ctx.body = reply.body;
  });

  return router;
}
