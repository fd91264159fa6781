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
 * Splits a byte stream into Server-Sent Events as chunks arrive, across chunk boundaries
 * (including a multi-byte character split between two chunks). Only complete events come out.
 */
export class SseSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';

  push(chunk: Buffer, onEvent: (event: SseEvent) => void): void {
    this.pending += this.decoder.write(chunk);
    for (;;) {
      const lf = this.pending.indexOf('\n\n');
      const crlf = this.pending.indexOf('\r\n\r\n');
      if (lf < 0 && crlf < 0) return;
      const useCrlf = crlf >= 0 && (lf < 0 || crlf < lf);
      const end = useCrlf ? crlf : lf;
      const raw = this.pending.slice(0, end);
      this.pending = this.pending.slice(end + (useCrlf ? 4 : 2));
      const event = parseEvent(raw);
      if (event) onEvent(event);
    }
  }
}

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
