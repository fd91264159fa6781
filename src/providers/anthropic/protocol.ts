/** The native messages protocol of `anthropic-native` channels (Anthropic and compatible). */
import type { TextChannel } from '../../config/channels';
import type { TextProtocol } from '../../proxy/text-proxy';
import { emptyUsage, stringFieldBytes } from '../usage';
import {
  anthropicErrorType,
  GENERATED_FIELDS as MESSAGE_FIELDS,
  isNativeErrorBody,
  MessagesStreamTap,
  toNativeBody,
  usageOfMessage,
  type CompatExtensions,
} from './mapping';

/** The version the gateway speaks to native channels; the client's own header is ignored (spec 5, 9). */
export const ANTHROPIC_VERSION = '2023-06-01';

export const messagesProtocol: TextProtocol = {
  channelType: 'anthropic-native',
  url: (c: TextChannel) => `${c.baseUrl}/v1/messages`,
  headers: (c, passthrough) => ({
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'x-api-key': c.apiKey,
    'anthropic-version': ANTHROPIC_VERSION,
    ...passthrough,
  }),
  upstreamBody: (body, upstreamModel) => toNativeBody(body as Record<string, unknown> & CompatExtensions, upstreamModel),
  usageOfBody: usageOfMessage,
  outputBytesOfBody: (text) => stringFieldBytes(text, MESSAGE_FIELDS),
  tap: () => new MessagesStreamTap(),
  isErrorBody: isNativeErrorBody,
  errorBody: (status, message) => ({ type: 'error', error: { type: anthropicErrorType(status), message } }),
};

/**
 * POST /v1/messages/count_tokens on the same channels: the same headers, body mapping, failover
 * and error shape; its answer (`{"input_tokens"}`) is free, so it reports no usage to bill.
 */
export const countTokensProtocol: TextProtocol = {
  ...messagesProtocol,
  url: (c: TextChannel) => `${messagesProtocol.url(c)}/count_tokens`,
  usageOfBody: () => emptyUsage(),
};
