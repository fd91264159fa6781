import { responsesBody } from '../../schemas/responses';
import { ref } from '../components';
import { requestSchema } from '../json-schema';
import { KEY_BEARER } from '../security';
import { errors, HEADERS, IDEMPOTENCY_KEY, JSON_BODY_400, keyedJson, pathId } from '../responses';
import type { RouteDoc } from '../types';
import { KEY_ERRORS } from '../responses';

const responseId = pathId("The response's id, as POST /v1/responses answered it.");
const NOT_FOUND = "No response of this key with that id (another key's, a deleted one, or one created with `store: false`).";
const BACKGROUND_400 =
  '`background: true` with `store: false`; `callback_url` without `background: true`, not https, on a private address, or for a key with no webhook secret (`invalid_callback_url`, `webhook_secret_missing`)';

/** A 200 that is the Response, or its events when streamed. */
const RESPONSE_OR_EVENTS = {
  headers: { 'x-request-id': HEADERS.requestId, ...HEADERS.rateLimit },
  content: {
    'application/json': { schema: ref('Response') },
    'text/event-stream': { schema: { type: 'string', description: 'SSE: `event: <type>` + `data: <ResponseStreamEvent JSON>`.' } },
  },
};

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
          "Proxied to an `openai-responses` channel serving the model, with failover before the first byte, a hold on the key for the most the request can cost and billing from the reported usage (reasoning tokens are output tokens). The answer carries the gateway's own response id; `previous_response_id` names a response of this key, and is sent to the channel that holds it. Without `max_output_tokens` the gateway sends its cap (TEXT_DEFAULT_MAX_TOKENS). `input` is required unless `previous_response_id` is given. `background: true` makes it a durable run (a Temporal workflow, id = the response id): its worst-case price is held as a charge, it is created upstream (failing over to the next channel while the provider surely took nothing), polled to its end, and settled from the reported usage (a failed one is refunded in full); `callback_url` (the gateway's own field) names where its completion webhook goes.",
        tags: ['Responses'],
        security: KEY_BEARER,
        parameters: [
          { ...IDEMPOTENCY_KEY, description: `Background responses only (a repeat answers the same response). ${IDEMPOTENCY_KEY.description ?? ''}` },
        ],
        requestBody: {
          required: true,
          description: 'At most MAX_JSON_BODY_BYTES (20 MiB).',
          content: { 'application/json': { schema: requestSchema(responsesBody) } },
        },
        responses: {
          '200': {
            description:
              "Not streamed: the Response. Streamed (`stream: true`): Server-Sent Events in the upstream's order, each `event: <type>` and `data: <ResponseStreamEvent>` with its `sequence_number`, from response.created to response.completed (or response.incomplete / response.failed); a stream that breaks off or goes quiet for TEXT_STREAM_IDLE_MS ends with an `error` event. `background: true`: the Response at once, status `queued`; with `stream: true` too, the events from the gateway's record as its run updates it (response.created, response.queued, response.in_progress, then every output item's events and response.completed / response.incomplete / response.failed), numbered the same on every read.",
            ...RESPONSE_OR_EVENTS,
            headers: { ...RESPONSE_OR_EVENTS.headers, 'x-gateway-overhead-ms': HEADERS.gatewayOverhead, 'idempotent-replayed': HEADERS.idempotentReplayed },
          },
          ...errors({
            ...KEY_ERRORS,
            400: `${JSON_BODY_400}; an invalid or unknown parameter (\`param\` names it); a model no openai-responses channel serves (\`model_not_found\`) or a native or video model (\`model_not_supported\`); an unknown previous_response_id (\`previous_response_not_found\`); ${BACKGROUND_400}`,
            402: "The key's balance does not cover the request's most expensive outcome (`insufficient_quota`).",
            409: 'A background create with this Idempotency-Key is still running (`idempotency_key_in_use`, Retry-After), or its response is no longer readable (`idempotency_key_expired`).',
            413: 'The body is over MAX_JSON_BODY_BYTES (`request_too_large`).',
            422: 'This Idempotency-Key was used for a different background create (`idempotency_key_reused`).',
            429: "Over the key's rate_limit_rpm, its streams (`too_many_streams`) or text requests (`too_many_requests_in_flight`) in flight; a background create over its max_concurrent_tasks (`too_many_tasks`, Retry-After).",
            502: 'No upstream channel answered; the last upstream error is relayed as the provider sent it when there was one.',
            503: 'A background response whose run Temporal could not start (`temporal_unavailable`); its hold is released.',
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
        description:
          "The Response as stored once it is final; a foreground one still running is read afresh from its channel. A background one is read from the gateway's record, which its run keeps current: no worker or upstream call is needed.",
        tags: ['Responses'],
        security: KEY_BEARER,
        parameters: [
          responseId,
          {
            name: 'stream',
            in: 'query',
            required: false,
            description: '`true`: the response as Server-Sent Events, followed to its end (a background one as its run updates it).',
            schema: { type: 'boolean' },
          },
          {
            name: 'starting_after',
            in: 'query',
            required: false,
            description: 'With `stream=true`: only the events after this sequence number (a client resuming its stream).',
            schema: { type: 'integer', minimum: 0 },
          },
        ],
        responses: {
          '200': {
            description: 'The Response; with `stream=true`, its events as Server-Sent Events (`event: <type>` + `data: <ResponseStreamEvent>`).',
            ...RESPONSE_OR_EVENTS,
          },
          ...errors({
            ...KEY_ERRORS,
            400: '`stream` not true or false, `starting_after` not a sequence number.',
            404: NOT_FOUND,
            502: 'Its channel could not be read.',
          }),
        },
      },
    },
    {
      method: 'post',
      path: '/v1/responses/{id}/cancel',
      operation: {
        operationId: 'cancelResponse',
        summary: "Cancel a background response (the SDK's responses.cancel)",
        description:
          'Only a response created with `background: true` can be cancelled; a finished one is answered as it is. Its run is cancelled first, then the answer is the Response with status `cancelled`; the run asks the provider to stop and bills what the provider says it produced (nothing known: the hold is released in full).',
        tags: ['Responses'],
        security: KEY_BEARER,
        parameters: [responseId],
        responses: {
          '200': keyedJson('The Response, status `cancelled` (or as it ended).', 'Response'),
          ...errors({
            ...KEY_ERRORS,
            400: 'Not a background response (`not_cancellable`).',
            404: NOT_FOUND,
            503: 'Temporal did not answer the cancellation (`temporal_unavailable`): nothing changed, retry.',
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
        description:
          "Gone for the key at once (a later read is a 404); the provider's copy is deleted after the answer (a background response still running: its run is cancelled, and deletes it as it closes).",
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
