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
  /** Feeds one event; returns false when the event must not be forwarded to the client. */
  onEvent(name: string | null, data: string): boolean;
  /** Whether onEvent may return false (then the stream is forwarded event by event, not as raw chunks). */
  readonly dropsEvents: boolean;
  readonly usage: TextUsage;
  /** The stream reached its protocol's proper end (message_stop, [DONE]) or an error event. */
  readonly ended: boolean;
  /** The stream carried an error event. */
  readonly errored: boolean;
  /** What to write to the client when the upstream stream breaks off without a proper end. */
  breakOff(message: string): string;
}
