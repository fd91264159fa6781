import type { TextChannel } from '../config/channels';
import { anthropicErrorType, GENERATED_FIELDS as MESSAGE_FIELDS, isNativeErrorBody, MessagesStreamTap, toNativeBody, usageOfMessage, type CompatExtensions } from '../upstreams/anthropic/mapping';
import { ChatStreamTap, GENERATED_FIELDS as CHAT_FIELDS, toUpstreamChatBody, usageOfCompletion } from '../upstreams/openai-chat/mapping';
import { stringFieldBytes } from '../upstreams/usage';
import type { TextProtocol } from './text-proxy';

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

function isOpenAiErrorBody(body: unknown): boolean {
  const error = (body as { error?: { message?: unknown } } | null)?.error;
  return typeof error === 'object' && error !== null && typeof error.message === 'string';
}

export const chatProtocol: TextProtocol = {
  channelType: 'openai-compatible',
  url: (c: TextChannel) => `${c.baseUrl}/chat/completions`,
  headers: (c) => ({
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    authorization: `Bearer ${c.apiKey}`,
  }),
  upstreamBody: toUpstreamChatBody,
  usageOfBody: usageOfCompletion,
  outputBytesOfBody: (text) => stringFieldBytes(text, CHAT_FIELDS),
  tap: (clientWantsUsage) => new ChatStreamTap(clientWantsUsage),
  isErrorBody: isOpenAiErrorBody,
  errorBody: (status, message) => ({
    error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', param: null, code: status === 429 ? 'rate_limit_exceeded' : null },
  }),
};
