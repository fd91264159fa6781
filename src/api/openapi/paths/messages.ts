import { countTokensBody, messagesBody } from '../../schemas/messages';
import { requestSchema } from '../json-schema';
import { KEY_EITHER } from '../security';
import { errors, HEADERS, JSON_BODY_400 } from '../responses';
import { ref } from '../components';
import type { Parameter, RouteDoc } from '../types';

/** The native messages format (routes/messages.ts, spec 4.11): every error in Anthropic's shape. */

const VERSION: Parameter = {
  name: 'anthropic-version',
  in: 'header',
  required: false,
  description: 'Accepted and ignored (the spec calls it vendor-version): the gateway speaks 2023-06-01 to its native channels.',
  schema: { type: 'string' },
};
const BETA: Parameter = {
  name: 'anthropic-beta',
  in: 'header',
  required: false,
  description: 'Forwarded to the provider unchanged.',
  schema: { type: 'string' },
};

const KEY_ERRORS = {
  401: 'No key, or an unknown, revoked or foreign key (`authentication_error`).',
  429: "Over the key's rate_limit_rpm, or too many failed authentications from this address (`rate_limit_error`).",
};

const requestIdHeaders = {
  'request-id': { description: "The gateway's request id, which the Anthropic SDK exposes as `_request_id`.", schema: { type: 'string' } },
  'x-request-id': HEADERS.requestId,
};

const BAD_REQUEST = `${JSON_BODY_400}; a parameter breaks a rule of the native format (the message names it); a model that is not native says where it belongs.`;

export function messagesRoutes(): RouteDoc[] {
  return [
    {
      method: 'post',
      path: '/v1/messages',
      operation: {
        operationId: 'createMessage',
        summary: 'A message in the native format of the cm models (Anthropic SDK base URL: the gateway, without /v1)',
        description:
          'The body is checked, then forwarded as sent (the compatibility extensions `stop`, `user`, `response_format`, `n`, penalties, `logit_bias`, `seed` are mapped or dropped first) to the anthropic-native channels serving the model, with failover. Fields the schema does not name travel unchanged. An upstream error (a 4xx it judged, or the last 429/5xx when every channel failed) is relayed as the provider sent it.',
        tags: ['Messages'],
        security: KEY_EITHER,
        parameters: [VERSION, BETA],
        requestBody: {
          required: true,
          description: 'At most MAX_JSON_BODY_BYTES (20 MiB).',
          content: { 'application/json': { schema: requestSchema(messagesBody) } },
        },
        responses: {
          '200': {
            description:
              "The provider's Message, unchanged; with `stream: true`, its Server-Sent Events relayed as they arrive (message_start, content_block_start, content_block_delta, content_block_stop, message_delta, message_stop, ping, error). A stream that breaks off or goes silent ends with an `event: error`.",
            headers: {
              ...requestIdHeaders,
              'upstream-request-id': { description: "The provider's own request id.", schema: { type: 'string' } },
              'x-gateway-overhead-ms': HEADERS.gatewayOverhead,
              'anthropic-ratelimit-requests-limit': { description: "The key's rate_limit_rpm (only for a key that has one).", schema: { type: 'string' } },
              'anthropic-ratelimit-requests-remaining': { description: 'Requests left in the bucket.', schema: { type: 'string' } },
              'anthropic-ratelimit-requests-reset': { description: 'When the bucket is full, an RFC 3339 time.', schema: { type: 'string' } },
            },
            content: {
              'application/json': { schema: ref('Message') },
              'text/event-stream': { schema: { type: 'string', description: "SSE: the provider's `event:` / `data:` pairs." } },
            },
          },
          ...errors(
            {
              ...KEY_ERRORS,
              400: BAD_REQUEST,
              402: "The key's balance does not cover the request's most expensive outcome (`billing_error`).",
              413: 'The body is over MAX_JSON_BODY_BYTES (`request_too_large`).',
              500: 'An internal error (`api_error`); quote the request id.',
              502: 'No native channel answered (`api_error`).',
            },
            'AnthropicError',
          ),
        },
      },
    },
    {
      method: 'post',
      path: '/v1/messages/count_tokens',
      operation: {
        operationId: 'countMessageTokens',
        summary: "Count a request's input tokens (free; what messages.countTokens() calls)",
        description: 'The same authentication, model routing and checks as /v1/messages (no max_tokens), through the same failover; no hold, no usage record.',
        tags: ['Messages'],
        security: KEY_EITHER,
        parameters: [VERSION, BETA],
        requestBody: { required: true, content: { 'application/json': { schema: requestSchema(countTokensBody) } } },
        responses: {
          '200': { description: "The provider's count.", headers: requestIdHeaders, content: { 'application/json': { schema: ref('TokenCount') } } },
          ...errors({ ...KEY_ERRORS, 400: BAD_REQUEST, 413: 'The body is over MAX_JSON_BODY_BYTES.', 502: 'No native channel answered.' }, 'AnthropicError'),
        },
      },
    },
  ];
}
