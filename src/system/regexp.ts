/** `text` as a pattern that matches it literally, to be joined into a larger RegExp. */
export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
