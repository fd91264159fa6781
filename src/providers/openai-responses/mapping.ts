/**
 * Between an upstream's Responses API and the gateway's client: usage as billed, the Response
 * object with the gateway's ids in place of the upstream's, and the stream tap that follows the
 * events (usage from the final response event, the ids rewritten in the events that carry the
 * whole Response object; every other event is forwarded as it came, in order).
 */
import { emptyUsage, stringFieldBytes, type StreamTap, type TextUsage } from '../usage';
import { FINAL_EVENTS, responseEvent, responseObject, type ResponseObject, type ResponseUsage } from './schemas';

/** OpenAI's input_tokens include the cached ones (billed apart); reasoning tokens are output tokens. */
export function toTextUsage(u: ResponseUsage): TextUsage {
  const cached = u.input_tokens_details?.cached_tokens ?? 0;
  return { inputTokens: Math.max(0, u.input_tokens - cached), outputTokens: u.output_tokens, cacheCreationTokens: 0, cacheReadTokens: cached };
}

export function usageOfResponse(body: unknown): TextUsage | null {
  const parsed = responseObject.safeParse(body);
  return parsed.success && parsed.data.usage ? toTextUsage(parsed.data.usage) : null;
}

/** Fields of the output (and of the stream's deltas) that carry generated text. */
export const GENERATED_FIELDS = ['text', 'arguments', 'delta'] as const;

export function responsesErrorData(message: string, sequenceNumber: number): string {
  const event = { type: 'error', code: 'upstream_stream_broken', message, param: null, sequence_number: sequenceNumber };
  return `event: error\ndata: ${JSON.stringify(event)}\n\n`;
}

/** The ids a client sees: the gateway's own, for the response and for the one it continues. */
export interface GatewayIds {
  id: string;
  previousResponseId: string | null;
}

/** The gateway ids of a response in the store: its own, and the one it continues as its record names it. */
export function storedIds(stored: { id: string; response: Record<string, unknown> | null }): GatewayIds {
  const previous = stored.response?.previous_response_id;
  return { id: stored.id, previousResponseId: typeof previous === 'string' ? previous : null };
}

/** The Response object as the client sees it: the gateway's ids, the gateway's model name. */
export function toClientResponse<T extends ResponseObject>(upstream: T, ids: GatewayIds, model: string): T {
  return { ...upstream, id: ids.id, model, previous_response_id: ids.previousResponseId };
}

/**
 * Follows a Responses event stream for one request. Events that carry the Response object
 * (response.created ... response.completed) are re-encoded with the gateway's ids; the last one
 * seen is kept (`response`) for the store; usage comes from the final one. The stream's proper
 * end is response.completed / response.incomplete / response.failed, or an `error` event.
 */
export class ResponsesStreamTap implements StreamTap {
  usage: TextUsage = emptyUsage();
  ended = false;
  errored = false;
  relayedOutputBytes = 0;
  /** The upstream's id of this response, once an event named it. */
  upstreamId: string | null = null;
  /** The last Response object relayed (gateway ids). */
  response: ResponseObject | null = null;
  private lastSequence = -1;

  /** Events are re-encoded one by one (never as raw chunks), so the rewritten ones replace theirs. */
  readonly dropsEvents = true;

  constructor(
    private readonly ids: GatewayIds,
    private readonly model: string,
  ) {}

  onEvent(name: string | null, data: string): boolean | string {
    const sequence = /"sequence_number":\s*(\d+)/.exec(data);
    if (sequence) this.lastSequence = Number(sequence[1]);
    const type = name ?? /"type":\s*"([^"]+)"/.exec(data)?.[1] ?? '';
    if (type.startsWith('response.') && data.includes('"response":')) return this.onResponseEvent(type, data);
    if (type === 'error') {
      this.ended = true;
      this.errored = true;
      return true;
    }
    this.relayedOutputBytes += stringFieldBytes(data, ['delta']);
    return true;
  }

  private onResponseEvent(type: string, data: string): boolean | string {
    const parsed = responseEvent.safeParse(safeJson(data));
    // Not a Response object we can read: forwarded as it is (its id is then the upstream's).
    if (!parsed.success) return true;
    const event = parsed.data;
    this.upstreamId ??= event.response.id;
    const response = toClientResponse(event.response, this.ids, this.model);
    this.response = response;
    if (FINAL_EVENTS.includes(type)) {
      this.ended = true;
      this.errored = type === 'response.failed';
      if (event.response.usage) this.usage = toTextUsage(event.response.usage);
    }
    return `event: ${type}\ndata: ${JSON.stringify({ ...event, response })}\n\n`;
  }

  breakOff(message: string): string {
    return responsesErrorData(message, this.lastSequence + 1);
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
