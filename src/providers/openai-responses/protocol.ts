/**
 * The Responses API as a text protocol of the proxy (proxy/text-proxy.ts): `openai-responses`
 * channels, POST {base_url}/responses. `responsesProtocol` is the channel type's; a request uses
 * `protocolForRequest`, which also gives the answer the gateway's ids and sends a
 * previous_response_id under the upstream's id.
 */
import type { TextChannel } from '../../config/channels';
import type { TextProtocol } from '../../proxy/text-proxy';
import { stringFieldBytes } from '../usage';
import { GENERATED_FIELDS, ResponsesStreamTap, toClientResponse, usageOfResponse, type GatewayIds } from './mapping';
import { responseObject, type ResponseObject } from './schemas';
import { responsesUrl } from './client';

function isOpenAiErrorBody(body: unknown): boolean {
  const error = (body as { error?: { message?: unknown } } | null)?.error;
  return typeof error === 'object' && error !== null && typeof error.message === 'string';
}

export const responsesProtocol: TextProtocol = {
  channelType: 'openai-responses',
  url: (c: TextChannel) => responsesUrl(c),
  headers: (c) => ({ 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${c.apiKey}` }),
  upstreamBody: (body, upstreamModel) => (body.model === upstreamModel ? null : { ...body, model: upstreamModel }),
  usageOfBody: usageOfResponse,
  outputBytesOfBody: (text) => stringFieldBytes(text, GENERATED_FIELDS),
  // The base protocol relays events unchanged; requests use protocolForRequest's tap.
  tap: () => new ResponsesStreamTap({ id: '', previousResponseId: null }, ''),
  isErrorBody: isOpenAiErrorBody,
  errorBody: (status, message) => ({
    error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', param: null, code: status === 429 ? 'rate_limit_exceeded' : null },
  }),
};

export interface ResponsesRequest {
  /** The gateway's ids of this response and of the one it continues. */
  ids: GatewayIds;
  /** The upstream's id of previous_response_id (its channel is the only one asked). */
  upstreamPreviousId: string | null;
  /** The model as the client named it. */
  model: string;
}

/** What one request learned from its answer: the upstream's id and the Response object the client got. */
export interface ResponsesOutcome {
  upstreamId: string | null;
  response: ResponseObject | null;
}

export function protocolForRequest(request: ResponsesRequest): { protocol: TextProtocol; outcome: () => ResponsesOutcome } {
  let taps: ResponsesStreamTap | null = null;
  let answered: ResponsesOutcome = { upstreamId: null, response: null };
  const protocol: TextProtocol = {
    ...responsesProtocol,
    upstreamBody: (body, upstreamModel) => {
      const out: Record<string, unknown> = { ...body, model: upstreamModel };
      if (request.upstreamPreviousId) out.previous_response_id = request.upstreamPreviousId;
      return out;
    },
    tap: () => (taps = new ResponsesStreamTap(request.ids, request.model)),
    mapAnswer: (text) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text.toString('utf8'));
      } catch {
        return text;
      }
      const upstream = responseObject.safeParse(parsed);
      if (!upstream.success) return text;
      const response = toClientResponse(upstream.data, request.ids, request.model);
      answered = { upstreamId: upstream.data.id, response };
      return Buffer.from(JSON.stringify(response));
    },
  };
  const outcome = (): ResponsesOutcome => (taps ? { upstreamId: taps.upstreamId, response: taps.response } : answered);
  return { protocol, outcome };
}
