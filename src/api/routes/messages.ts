import Router from '@koa/router';
import { findVideoModel } from '../../catalog/models';
import { isNativeTextModel, isResponsesOnlyModel, NATIVE_TEXT_MODELS, RESPONSES_API_HINT } from '../../catalog/text-models';
import type { Config } from '../../config/env';
import { messagesProtocol } from '../../providers/anthropic/protocol';
import { chatProtocol } from '../../providers/openai-compatible/protocol';
import type { RateLimiter } from '../../limits/rate-limiter';
import type { KeyStore } from '../../store/keys';
import type { GatewayState } from '../context';
import { InvalidRequestError } from '../errors';
import { anthropicErrors } from '../middleware/anthropic-errors';
import { anyKeyAuth } from '../middleware/auth';
import { jsonBody } from '../middleware/json-body';
import { countTokensBody, messagesBody } from '../schemas/messages';
import { countTokensUpstream } from '../count-tokens';
import { parseOrThrow } from '../schemas/zod-error';
import { answerFromUpstream, textChannelsFor, type TextRouteDeps } from '../text-proxy-route';

export interface MessagesRouteDeps extends TextRouteDeps {
  config: Config;
  keys: KeyStore;
  limiter: RateLimiter;
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
 * POST /v1/messages (spec 4.11): the native format, proxied to native channels only, with
 * no conversion beyond the compatibility extensions; every error in Anthropic's shape. And
 * POST /v1/messages/count_tokens, with the same checks, free.
 */
export function messagesRoutes(deps: MessagesRouteDeps): Router<GatewayState> {
  const router = new Router<GatewayState>();
  const limit = deps.config.env.MAX_JSON_BODY_BYTES;

  router.post('/v1/messages', anthropicErrors(limit), anyKeyAuth(deps.keys, deps.limiter), jsonBody(limit), async (ctx) => {
    const raw = ctx.request.body as { model?: unknown } | null;
    if (raw && typeof raw === 'object' && typeof raw.model === 'string') refuseNonNative(raw.model, deps);
    const body = parseOrThrow(messagesBody, raw);
    const channels = textChannelsFor(deps, messagesProtocol, body.model);
    if (channels.length === 0) {
      throw new InvalidRequestError(`The model '${body.model}' is not available on this gateway: no native channel serves it.`, 'model', 'model_not_available');
    }
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

  router.post('/v1/messages/count_tokens', anthropicErrors(limit), anyKeyAuth(deps.keys, deps.limiter), jsonBody(limit), async (ctx) => {
    const raw = ctx.request.body as { model?: unknown } | null;
    if (raw && typeof raw === 'object' && typeof raw.model === 'string') refuseNonNative(raw.model, deps);
    const body = parseOrThrow(countTokensBody, raw);
    const channels = textChannelsFor(deps, messagesProtocol, body.model);
    if (channels.length === 0) {
      throw new InvalidRequestError(`The model '${body.model}' is not available on this gateway: no native channel serves it.`, 'model', 'model_not_available');
    }
    await countTokensUpstream(ctx, channels, deps.channelHealth, body, deps.textLimits.timeoutMs);
  });

  return router;
}
