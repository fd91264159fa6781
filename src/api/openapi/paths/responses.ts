import { responsesBody } from '../../schemas/responses';
import { ref } from '../components';
import { requestSchema } from '../json-schema';
import { KEY_BEARER } from '../security';
import { errors, HEADERS, JSON_BODY_400, keyedJson, pathId } from '../responses';
import type { RouteDoc } from '../types';
import { KEY_ERRORS } from '../responses';

const responseId = pathId("The response's id, as POST /v1/responses answered it.");
const NOT_FOUND = "No response of this key with that id (another key's, a deleted one, or one created with `store: false`).";
const BACKGROUND_400 = 'Background responses are not enabled on this gateway (`background_not_enabled`).';

/** The Responses API (routes/responses.ts). */
export function responsesRoutes(): RouteDoc[] {
  return [
    {
      method: 'post',
      path: '/v1/responses',
      operation: {
        operationId: 'createResponse',
        summary: "Create a response (OpenAI's Responses API; the SDK's responses.create)",
        description:
          "Proxied to an `openai-responses` channel serving the model, with failover before the first byte, a hold on the key for the most the request can cost and billing from the reported usage (reasoning tokens are output tokens). The answer carries the gateway's own response id; `previous_response_id` names a response of this key, and is sent to the channel that holds it. Without `max_output_tokens` the gateway sends its cap (TEXT_DEFAULT_MAX_TOKENS). `input` is required unless `previous_response_id` is given.",
        tags: ['Responses'],
        security: KEY_BEARER,
        requestBody: {
          required: true,
          description: 'At most MAX_JSON_BODY_BYTES (20 MiB).',
          content: { 'application/json': { schema: requestSchema(responsesBody) } },
        },
        responses: {
          '200': {
            description:
              "Not streamed: the Response. Streamed (`stream: true`): Server-Sent Events in the upstream's order, each `event: <type>` and `data: <ResponseStreamEvent>` with its `sequence_number`, from response.created to response.completed (or response.incomplete / response.failed); a stream that breaks off or goes quiet for TEXT_STREAM_IDLE_MS ends with an `error` event. `background: true`: the Response at once, status `queued`.",
            headers: { 'x-request-id': HEADERS.requestId, ...HEADERS.rateLimit },
            content: {
              'application/json': { schema: ref('Response') },
              'text/event-stream': { schema: { type: 'string', description: 'SSE: `event: <type>` + `data: <ResponseStreamEvent JSON>`.' } },
            },
          },
          ...errors({
            ...KEY_ERRORS,
            400: `${JSON_BODY_400}; an invalid or unknown parameter (\`param\` names it); a model no openai-responses channel serves (\`model_not_found\`) or a native or video model (\`model_not_supported\`); an unknown previous_response_id (\`previous_response_not_found\`); ${BACKGROUND_400}`,
            402: "The key's balance does not cover the request's most expensive outcome (`insufficient_quota`).",
            413: 'The body is over MAX_JSON_BODY_BYTES (`request_too_large`).',
            429: "Over the key's rate_limit_rpm, its streams (`too_many_streams`) or text requests (`too_many_requests_in_flight`) in flight.",
            502: 'No upstream channel answered; the last upstream error is relayed as the provider sent it when there was one.',
          }),
        },
      },
    },
    {
      method: 'get',
      path: '/v1/responses/{id}',
      operation: {
        operationId: 'retrieveResponse',
        summary: "Retrieve a response (the SDK's responses.retrieve)",
        description: 'The Response as stored once it is final; one still running is read afresh from its channel.',
        tags: ['Responses'],
        security: KEY_BEARER,
        parameters: [responseId],
        responses: {
          '200': keyedJson('The Response.', 'Response'),
          ...errors({ ...KEY_ERRORS, 404: NOT_FOUND, 502: 'Its channel could not be read.' }),
        },
      },
    },
    {
      method: 'post',
      path: '/v1/responses/{id}/cancel',
      operation: {
        operationId: 'cancelResponse',
        summary: "Cancel a background response (the SDK's responses.cancel)",
        description: 'Only a response created with `background: true` can be cancelled; a finished one is answered as it is.',
        tags: ['Responses'],
        security: KEY_BEARER,
        parameters: [responseId],
        responses: {
          '200': keyedJson('The Response, status `cancelled` (or as it ended).', 'Response'),
          ...errors({
            ...KEY_ERRORS,
            400: `Not a background response (\`not_cancellable\`). ${BACKGROUND_400}`,
            404: NOT_FOUND,
            502: 'Its channel could not be reached.',
          }),
        },
      },
    },
    {
      method: 'delete',
      path: '/v1/responses/{id}',
      operation: {
        operationId: 'deleteResponse',
        summary: "Delete a response (the SDK's responses.delete)",
        description: "Gone for the key at once (a later read is a 404); the provider's copy is deleted after the answer.",
        tags: ['Responses'],
        security: KEY_BEARER,
        parameters: [responseId],
        responses: {
          '200': keyedJson('The deletion.', 'ResponseDeleted'),
          ...errors({ ...KEY_ERRORS, 404: NOT_FOUND }),
        },
      },
    },
  ];
}
