import { escapeRegExp } from '../system/regexp';

/**
 * Token usage in one shape for both text protocols, as billed: `inputTokens` are the input
 * tokens read at the full price (cached ones excluded), cache reads and writes counted apart.
 * Anthropic reports it that way; OpenAI's prompt_tokens include the cached tokens, which the
 * chat mapping subtracts.
 */
export interface TextUsage {
  inputTokens: number;
  outputTokens: number;
  cacheCreationTokens: number;
  cacheReadTokens: number;
}

/** A fresh all-zero count, for a tap to fill in or an answer that reported none. */
export const emptyUsage = (): TextUsage => ({ inputTokens: 0, outputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0 });

/** What a streamed answer has told the gateway so far. */
export interface StreamTap {
  /**
   * Feeds one event; returns false when the event must not be forwarded to the client, or (with
   * dropsEvents) the encoded event to forward in its place.
   */
  onEvent(name: string | null, data: string): boolean | string;
  /** Whether onEvent may return false (then the stream is forwarded event by event, not as raw chunks). */
  readonly dropsEvents: boolean;
  readonly usage: TextUsage;
  /** The stream reached its protocol's proper end (message_stop, [DONE]) or an error event. */
  readonly ended: boolean;
  /** The stream carried an error event. */
  readonly errored: boolean;
  /**
   * UTF-8 bytes of the generated text relayed so far (text, thinking, tool arguments): what a
   * stream that ends without usage is billed by (billing/text-ceiling.ts estimateUsage).
   */
  readonly relayedOutputBytes: number;
  /** What to write to the client when the upstream stream breaks off without a proper end. */
  breakOff(message: string): string;
}

/**
 * UTF-8 bytes of the JSON string values of `fields` in one JSON text, as written (escapes
 * count as their characters): a cheap count of generated text without parsing every event.
 * One scan of the text for all the fields (it runs on every streamed event).
 */
export function stringFieldBytes(json: string, fields: readonly string[]): number {
  const opener = openerOf(fields);
  opener.lastIndex = 0;
  let bytes = 0;
  for (let found = opener.exec(json); found; found = opener.exec(json)) {
    const start = opener.lastIndex;
    let end = json.indexOf('"', start);
    // A quote preceded by an odd number of backslashes is escaped: part of the value.
    while (end > 0) {
      let slashes = 0;
      for (let i = end - 1; i >= start && json.charCodeAt(i) === 92; i--) slashes++;
      if (slashes % 2 === 0) break;
      end = json.indexOf('"', end + 1);
    }
    if (end < 0) break;
    bytes += Buffer.byteLength(json.slice(start, end));
    opener.lastIndex = end + 1;
  }
  return bytes;
}

const openers = new Map<string, RegExp>();

/** `"field":"` or `"field": "` for any of the fields, one pattern per list of fields. */
function openerOf(fields: readonly string[]): RegExp {
  const key = fields.join('\0');
  let opener = openers.get(key);
  if (!opener) {
    opener = new RegExp(`"(?:${fields.map(escapeRegExp).join('|')})": ?"`, 'g');
    openers.set(key, opener);
  }
  return opener;
}
