/**
 * Server-Sent Events read from a fetch body (EventSource cannot POST nor send the CSRF
 * header): frames split on blank lines, `event:` and `data:` fields joined as the spec says.
 */

export interface SseEvent {
  event: string;
  data: string;
}

export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  // A CR that ends a chunk may be the first half of a CRLF: it waits for the next chunk.
  let heldCr = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    let text = heldCr + decoder.decode(value, { stream: true });
    heldCr = text.endsWith('\r') ? '\r' : '';
    if (heldCr) text = text.slice(0, -1);
    buffer += text.replace(/\r\n?/g, '\n');
    let end = buffer.indexOf('\n\n');
    while (end >= 0) {
      const frame = parseFrame(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (frame) yield frame;
      end = buffer.indexOf('\n\n');
    }
  }
  const last = parseFrame(buffer + (heldCr ? '\n' : ''));
  if (last) yield last;
}

function parseFrame(text: string): SseEvent | null {
  let event = 'message';
  const data: string[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith(':')) continue; // keep-alive comments
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return data.length ? { event, data: data.join('\n') } : null;
}

/** The text a messages, chat-completions or responses stream event adds, or an error it reports. */
export function textOf(event: SseEvent): { text?: string; error?: string; done?: boolean } {
  if (event.data === '[DONE]') return { done: true };
  let body: unknown;
  try {
    body = JSON.parse(event.data);
  } catch {
    return {};
  }
  if (typeof body !== 'object' || body === null) return {};
  const b = body as {
    type?: string;
    delta?: { type?: string; text?: string } | string;
    choices?: { delta?: { content?: string | null } }[];
    error?: { message?: string };
    message?: string;
  };
  if (b.error) return { error: b.error.message ?? 'the stream ended with an error' };
  // The Responses API: text deltas, its final events, and its own error event.
  if (b.type === 'response.output_text.delta' && typeof b.delta === 'string') return { text: b.delta };
  if (b.type === 'response.completed' || b.type === 'response.incomplete') return { done: true };
  if (b.type === 'error' || b.type === 'response.failed') return { error: b.message ?? 'the response failed' };
  if (typeof b.delta === 'string') return {};
  if (b.type === 'content_block_delta' && b.delta?.type === 'text_delta') return { text: b.delta.text ?? '' };
  if (b.type === 'message_stop') return { done: true };
  const content = b.choices?.[0]?.delta?.content;
  if (typeof content === 'string') return { text: content };
  return {};
}
