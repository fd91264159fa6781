/**
 * Client JSON text, bounded before it is parsed. JSON.parse itself copes with any nesting,
 * but what handles the value next (schemas, re-serialising for an upstream, Temporal's payload
 * converter) recurses, and a 150,000-deep array in an unknown field overflowed the stack (a
 * 500). Real request bodies nest a dozen levels; tool schemas a few more.
 */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/**
 * True when arrays and objects in `text` nest deeper than `maxDepth`. It runs on every JSON
 * request before JSON.parse, so it is cheap where bodies are large: string contents (base64
 * images and PDFs, long prompts) are skipped with indexOf, never walked character by character;
 * only the structure between strings is. It does not validate: malformed text is left for
 * JSON.parse to refuse (an unterminated string ends the scan with false).
 */
export function exceedsJsonDepth(text: string, maxDepth = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  const length = text.length;
  let i = 0;
  while (i < length) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = closingQuote(text, i);
      if (end < 0) return false;
      i = end + 1;
      continue;
    }
    if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > maxDepth) return true;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--;
    }
    i++;
  }
  return false;
}

/** The index of the quote that ends the string opened at `open`, or -1. */
function closingQuote(text: string, open: number): number {
  let at = text.indexOf('"', open + 1);
  while (at >= 0) {
    // A quote ends the string unless an odd run of backslashes escapes it. Each run is counted
    // once (runs between successive quotes are disjoint), so the scan stays linear.
    let backslashes = 0;
    for (let k = at - 1; text.charCodeAt(k) === BACKSLASH; k--) backslashes++;
    if ((backslashes & 1) === 0) return at;
    at = text.indexOf('"', at + 1);
  }
  return -1;
}
