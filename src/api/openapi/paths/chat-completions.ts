import { chatTextBody } from '../../schemas/chat-text';
import { chatVideoBody } from '../../schemas/chat-video';
import { ref } from '../components';
import { requestSchema } from '../json-schema';
import { KEY_BEARER } from '../security';
import { errors, HEADERS, IDEMPOTENCY_KEY, JSON_BODY_400 } from '../responses';
import type { RouteDoc } from '../types';
import { CREATE_ERRORS } from './video-tasks';

/** POST /v1/chat/completions (routes/chat-completions.ts): text models proxied, motion models as video tasks (spec 4.10). */
export function chatCompletionRoutes(): RouteDoc[] {
  return [
    {
      method: 'post',
      path: '/v1/chat/completions',
      operation: {
        operationId: 'createChatCompletion',
        summary: 'Chat completions: text models proxied to their channels; motion models make a video',
        description:
          'The model picks the schema: a text model (not a video model) is checked against the first and forwarded as sent to an openai-compatible channel that serves it, with failover; a motion model against the second, and the video task it makes is told as a chat completion (`task_id: <id>`, `progress: <n>%`, `video_url: <url>` or `failed: <reason>` lines). A cm (native) model is a 400 pointing to /v1/messages; a vidgen model a 400 naming its endpoint.',
        tags: ['Chat'],
        security: KEY_BEARER,
        parameters: [{ ...IDEMPOTENCY_KEY, description: `Motion models only. ${IDEMPOTENCY_KEY.description ?? ''}` }],
        requestBody: {
          required: true,
          description: 'At most MAX_JSON_BODY_BYTES (20 MiB).',
          content: {
            'application/json': {
              schema: {
                anyOf: [
                  { ...requestSchema(chatTextBody), title: 'Text model' },
                  { ...requestSchema(chatVideoBody), title: 'Motion model' },
                ],
              },
            },
          },
        },
        responses: {
          '200': {
            description:
              'Not streamed: one chat.completion (a motion model answers once its task ends, usage 0/0/0). Streamed (`stream: true`): Server-Sent Events, each `data: <chat.completion.chunk>` (schema ChatCompletionChunk), ending `data: [DONE]`; a stream that breaks off ends with a `data: {"error": {...}}` line; motion streams send `: keep-alive` comments every 15 s.',
            headers: {
              'x-request-id': HEADERS.requestId,
              ...HEADERS.rateLimit,
              'openai-processing-ms': { description: 'Text models: milliseconds from the request to the start of the answer.', schema: { type: 'string' } },
              'x-gateway-overhead-ms': HEADERS.gatewayOverhead,
            },
            content: {
              'application/json': { schema: ref('ChatCompletion') },
              'text/event-stream': { schema: { type: 'string', description: 'SSE: `data: <ChatCompletionChunk JSON>` events, then `data: [DONE]`.' } },
            },
          },
          ...errors({
            ...CREATE_ERRORS,
            400: `${JSON_BODY_400}; an invalid parameter (\`param\` names it); a model this endpoint does not serve (\`model_not_found\`, \`model_not_supported\`); no user message text for a motion model (\`missing_prompt\`).`,
            402: "The key's balance does not cover the request's most expensive outcome (`insufficient_quota`).",
            413: 'The body is over MAX_JSON_BODY_BYTES (`request_too_large`).',
            429: "Over the key's rate_limit_rpm, its streams (`too_many_streams`), text requests (`too_many_requests_in_flight`) or video tasks (`too_many_tasks`) in flight.",
            502: 'No upstream channel answered (text models); the last upstream error is relayed as the provider sent it when there was one.',
          }),
        },
      },
    },
  ];
}
