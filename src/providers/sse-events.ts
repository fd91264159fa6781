import { StringDecoder } from 'node:string_decoder';

export interface SseEvent {
  /** The `event:` name, or null when the event has none (OpenAI's chunks). */
  name: string | null;
  /** The `data:` lines joined with newlines. */
  data: string;
  /** The event as received, without its blank-line terminator. */
  raw: string;
}

/**
 * The longest event the splitter holds to parse, in characters. Far above any provider's event
 * (a Responses API `response.completed` carrying its images is a few MiB), and a bound on what a
 * stream that never ends its event (a misbehaving upstream, a body that is not SSE) can cost.
 */
export const MAX_SSE_EVENT_CHARS = 32 * 1024 * 1024;

/**
 * Splits a byte stream into Server-Sent Events as chunks arrive, across chunk boundaries
 * (including a multi-byte character split between two chunks). Only complete events come out.
 *
 * An event that spans many chunks is kept as its pieces, and each chunk is searched only for
 * itself (and the three characters before it, where a terminator may have begun): joining and
 * searching the whole unfinished event on every chunk would cost time quadratic in its length,
 * seconds of a blocked event loop for an event of a few MiB.
 */
export class SseSplitter {
  private readonly decoder = new StringDecoder('utf8');
  /** The unfinished event's text, in the pieces it came in. */
  private parts: string[] = [];
  private partsLength = 0;
  /** Its last three characters: where a terminator split between chunks begins. */
  private tail = '';

  /** False once an unfinished event is longer than MAX_SSE_EVENT_CHARS: the stream cannot be read on. */
  push(chunk: Buffer, onEvent: (event: SseEvent) => void): boolean {
    const text = this.decoder.write(chunk);
    if (this.parts.length > 0) {
      const seam = this.tail + text.slice(0, 3);
      if (!hasEnd(seam) && !hasEnd(text)) {
        this.keep(text);
        return this.partsLength <= MAX_SSE_EVENT_CHARS;
      }
    }
    const pending = this.parts.length > 0 ? this.parts.join('') + text : text;
    this.parts = [];
    this.partsLength = 0;
    this.tail = '';
    // Each kind of terminator is searched for again only once the one found is used: a chunk of
    // many events is read through once, not once per event.
    let at = 0;
    let lf = pending.indexOf('\n\n');
    let crlf = pending.indexOf('\r\n\r\n');
    while (lf >= 0 || crlf >= 0) {
      const useCrlf = crlf >= 0 && (lf < 0 || crlf < lf);
      const end = useCrlf ? crlf : lf;
      const event = parseEvent(pending.slice(at, end));
      at = end + (useCrlf ? 4 : 2);
      if (lf >= 0 && lf < at) lf = pending.indexOf('\n\n', at);
      if (crlf >= 0 && crlf < at) crlf = pending.indexOf('\r\n\r\n', at);
      if (event) onEvent(event);
    }
    this.keep(at === 0 ? pending : pending.slice(at));
    return this.partsLength <= MAX_SSE_EVENT_CHARS;
  }

  private keep(text: string): void {
    if (text.length === 0) return;
    this.parts.push(text);
    this.partsLength += text.length;
    this.tail = (this.tail + text).slice(-3);
  }
}

const hasEnd = (text: string): boolean => text.includes('\n\n') || text.includes('\r\n\r\n');

function parseEvent(raw: string): SseEvent | null {
  let name: string | null = null;
  let data: string | null = null;
  for (const line of raw.split('\n')) {
    const l = line.endsWith('\r') ? line.slice(0, -1) : line;
    if (l.startsWith('data:')) {
      const value = l.charCodeAt(5) === 32 ? l.slice(6) : l.slice(5);
      data = data === null ? value : `${data}\n${value}`;
    } else if (l.startsWith('event:')) {
      name = (l.charCodeAt(6) === 32 ? l.slice(7) : l.slice(6)).trim();
    }
  }
  if (data === null && name === null) return null;
  return { name, data: data ?? '', raw };
}
