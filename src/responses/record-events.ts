/**
 * A stored response as a Responses API event stream: what a background response streams
 * (`background: true, stream: true`, and GET /v1/responses/{id}?stream=true). The gateway polls
 * a background response upstream, so its record moves queued -> in_progress -> its end; the
 * events are a pure function of where the record stands, numbered the same on every read, so a
 * client that reconnects with `starting_after` continues exactly where it left.
 *
 *   0 response.created, 1 response.queued, 2 response.in_progress (once it runs), then at its end
 *   each output item (added, its parts and deltas, done) and the final event: response.completed,
 *   response.incomplete, or response.failed (for a failed or a cancelled response: its status
 *   says which).
 *
 * Pure: no I/O.
 */

type Json = Record<string, unknown>;

export interface RecordEvent {
  type: string;
  data: Json;
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const text = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The Response as it was at an earlier stage: the record's, with that status and nothing produced yet. */
function at(response: Json, status: 'queued' | 'in_progress'): Json {
  return { ...response, status, output: [], usage: null, error: null, incomplete_details: null };
}

/** The events of one output item, as a provider streams it: added (empty), its parts' deltas, done. */
function itemEvents(item: Json, outputIndex: number): RecordEvent[] {
  const id = text(item.id);
  const events: RecordEvent[] = [];
  const push = (type: string, data: Json) => events.push({ type, data: { output_index: outputIndex, ...data } });
  if (item.type === 'message') {
    push('response.output_item.added', { item: { ...item, status: 'in_progress', content: [] } });
    list(item.content).forEach((part, contentIndex) => {
      if (!isObject(part)) return;
      const at = { item_id: id, content_index: contentIndex };
      if (part.type === 'output_text') {
        push('response.content_part.added', { ...at, part: { ...part, text: '', annotations: [] } });
        push('response.output_text.delta', { ...at, delta: text(part.text), logprobs: [] });
        push('response.output_text.done', { ...at, text: text(part.text), logprobs: [] });
      } else {
        push('response.content_part.added', { ...at, part });
      }
      push('response.content_part.done', { ...at, part });
    });
  } else if (item.type === 'reasoning') {
    push('response.output_item.added', { item: { ...item, summary: [] } });
    list(item.summary).forEach((part, summaryIndex) => {
      if (!isObject(part)) return;
      const at = { item_id: id, summary_index: summaryIndex };
      push('response.reasoning_summary_part.added', { ...at, part: { ...part, text: '' } });
      push('response.reasoning_summary_text.delta', { ...at, delta: text(part.text) });
      push('response.reasoning_summary_text.done', { ...at, text: text(part.text) });
      push('response.reasoning_summary_part.done', { ...at, part });
    });
  } else if (item.type === 'function_call') {
    push('response.output_item.added', { item: { ...item, arguments: '', status: 'in_progress' } });
    push('response.function_call_arguments.delta', { item_id: id, delta: text(item.arguments) });
    push('response.function_call_arguments.done', { item_id: id, arguments: text(item.arguments) });
  } else {
    push('response.output_item.added', { item });
  }
  push('response.output_item.done', { item });
  return events;
}

/** The final event's type for a terminal status; null while it runs. */
function finalType(status: unknown): string | null {
  if (status === 'completed') return 'response.completed';
  if (status === 'incomplete') return 'response.incomplete';
  if (status === 'failed' || status === 'cancelled') return 'response.failed';
  return null;
}

/** Every event of the response as its record stands now, numbered from 0 (sequence_number). */
export function recordEvents(response: Json): (RecordEvent & { data: Json & { sequence_number: number } })[] {
  const events: RecordEvent[] = [
    { type: 'response.created', data: { response: at(response, 'queued') } },
    { type: 'response.queued', data: { response: at(response, 'queued') } },
  ];
  const final = finalType(response.status);
  if (response.status !== 'queued') events.push({ type: 'response.in_progress', data: { response: at(response, 'in_progress') } });
  if (final) {
    list(response.output).forEach((item, i) => {
      if (isObject(item)) events.push(...itemEvents(item, i));
    });
    events.push({ type: final, data: { response } });
  }
  return events.map((e, sequence) => ({ type: e.type, data: { type: e.type, sequence_number: sequence, ...e.data } }));
}

/** Whether the response's stream has ended (its final event is among its events). */
export function isStreamEnded(response: Json): boolean {
  return finalType(response.status) !== null;
}

/** One event as Server-Sent Events: `event: <type>` and its JSON. */
export function sseOf(event: RecordEvent): string {
  return `event: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`;
}
