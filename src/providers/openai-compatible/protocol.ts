/** The chat completions protocol of `openai-compatible` channels (OpenAI and compatible). */
import type { TextChannel } from '../../config/channels';
import type { TextProtocol } from '../../proxy/text-proxy';
import { stringFieldBytes } from '../usage';
import { ChatStreamTap, GENERATED_FIELDS as CHAT_FIELDS, toUpstreamChatBody, usageOfCompletion } from './mapping';

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
