import { z } from 'zod';
import { emptyUsage, stringFieldBytes, type StreamTap, type TextUsage } from '../usage';

/**
 * The native messages protocol (upstreams.md 3). The body is forwarded as the client sent
 * it; the only changes are the upstream model name (when a channel maps it) and the
 * compatibility extensions of spec 4.11, which the native API does not take.
 */
export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; json_schema: { name?: string; schema?: Record<string, unknown>; description?: string; strict?: boolean | null } };

export interface CompatExtensions {
  n?: number;
  stop?: string | string[] | null;
  presence_penalty?: number;
  frequency_penalty?: number;
  logit_bias?: Record<string, number>;
  user?: string;
  response_format?: ResponseFormat;
  seed?: number;
}

const COMPAT_KEYS = ['n', 'stop', 'presence_penalty', 'frequency_penalty', 'logit_bias', 'user', 'response_format', 'seed'] as const;

type SystemPrompt = string | { type: 'text'; text: string }[];

function jsonInstruction(format: ResponseFormat): string | null {
  if (format.type === 'json_object') return 'Respond with a single valid JSON object and nothing else: no prose, no code fences.';
  if (format.type === 'json_schema') {
    const schema = format.json_schema.schema ? ` It must conform to this JSON Schema: ${JSON.stringify(format.json_schema.schema)}` : '';
    return `Respond with a single valid JSON object and nothing else: no prose, no code fences.${schema}`;
  }
  return null;
}

function appendToSystem(system: unknown, text: string): SystemPrompt {
  if (typeof system === 'string' && system !== '') return `${system}\n\n${text}`;
  if (Array.isArray(system) && system.length > 0) return [...(system as { type: 'text'; text: string }[]), { type: 'text', text }];
  return text;
}

/**
 * Returns the body to send upstream, or null when the client's bytes can go unchanged.
 * - `stop` joins `stop_sequences` (duplicates dropped);
 * - `user` becomes `metadata.user_id` unless the client set that itself;
 * - `response_format` json_object / json_schema becomes an instruction appended to `system`;
 * - `n` (validated to be 1), `presence_penalty`, `frequency_penalty`, `logit_bias` and `seed`
 *   have no native counterpart: validated, then dropped.
 */
export function toNativeBody(body: Record<string, unknown> & CompatExtensions, upstreamModel: string): Record<string, unknown> | null {
  const hasCompat = COMPAT_KEYS.some((k) => body[k] !== undefined);
  if (!hasCompat && body.model === upstreamModel) return null;
  const compat: ReadonlySet<string> = new Set(COMPAT_KEYS);
  const out: Record<string, unknown> = Object.fromEntries(Object.entries({ ...body, model: upstreamModel }).filter(([k]) => !compat.has(k)));
  if (body.stop !== undefined && body.stop !== null) {
    const extra = typeof body.stop === 'string' ? [body.stop] : body.stop;
    const existing = Array.isArray(body.stop_sequences) ? (body.stop_sequences as string[]) : [];
    out.stop_sequences = [...new Set([...existing, ...extra])];
  }
  if (body.user !== undefined) {
    const metadata = (body.metadata ?? {}) as Record<string, unknown>;
    if (metadata.user_id === undefined || metadata.user_id === null) out.metadata = { ...metadata, user_id: body.user };
  }
  const instruction = body.response_format ? jsonInstruction(body.response_format) : null;
  if (instruction) out.system = appendToSystem(body.system, instruction);
  return out;
}

const usageSchema = z.object({
  input_tokens: z.number().int().nonnegative().nullish(),
  output_tokens: z.number().int().nonnegative().nullish(),
  cache_creation_input_tokens: z.number().int().nonnegative().nullish(),
  cache_read_input_tokens: z.number().int().nonnegative().nullish(),
});
type NativeUsage = z.infer<typeof usageSchema>;

/** Later reports win field by field: message_delta's counts are cumulative. */
function merge(into: TextUsage, u: NativeUsage): void {
  if (u.input_tokens != null) into.inputTokens = u.input_tokens;
  if (u.output_tokens != null) into.outputTokens = u.output_tokens;
  if (u.cache_creation_input_tokens != null) into.cacheCreationTokens = u.cache_creation_input_tokens;
  if (u.cache_read_input_tokens != null) into.cacheReadTokens = u.cache_read_input_tokens;
}

const messageBody = z.object({ type: z.literal('message'), usage: usageSchema });

/** Usage of a non-streamed Message; null when the body is not one. */
export function usageOfMessage(body: unknown): TextUsage | null {
  const parsed = messageBody.safeParse(body);
  if (!parsed.success) return null;
  const usage: TextUsage = emptyUsage();
  merge(usage, parsed.data.usage);
  return usage;
}

const messageStart = z.object({ message: z.object({ usage: usageSchema.optional() }) });
const messageDelta = z.object({ usage: usageSchema.optional() });

export function errorEvent(type: string, message: string): string {
  return `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type, message } })}\n\n`;
}

/** The fields of a content_block_delta (or a Message's content) that carry generated text. */
export const GENERATED_FIELDS = ['text', 'thinking', 'partial_json'] as const;

/**
 * Follows a native stream: usage from message_start, then message_delta (upstreams.md 3);
 * a proper end is message_stop or an error event. Every event is forwarded as it came.
 */
export class MessagesStreamTap implements StreamTap {
  readonly usage: TextUsage = emptyUsage();
  ended = false;
  errored = false;
  relayedOutputBytes = 0;
  readonly dropsEvents = false;

  onEvent(name: string | null, data: string): boolean {
    if (name === 'content_block_delta') {
      this.relayedOutputBytes += stringFieldBytes(data, GENERATED_FIELDS);
    } else if (name === 'message_start' || name === 'message_delta') {
      try {
        const json: unknown = JSON.parse(data);
        const parsed = name === 'message_start' ? messageStart.safeParse(json) : messageDelta.safeParse(json);
        const u = parsed.success ? ('message' in parsed.data ? parsed.data.message.usage : parsed.data.usage) : undefined;
        if (u) merge(this.usage, u);
      } catch {
        // A malformed event is the client's to see; usage keeps what it had.
      }
    } else if (name === 'message_stop') {
      this.ended = true;
    } else if (name === 'error') {
      this.ended = true;
      this.errored = true;
    }
    return true;
  }

  breakOff(message: string): string {
    return errorEvent('api_error', message);
  }
}

/** Anthropic's error type for a status (upstreams.md 3). */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

const errorBody = z.object({ type: z.literal('error'), error: z.object({ type: z.string(), message: z.string() }) });

/** True when an upstream error body is already in the native shape (so it can pass unchanged). */
export function isNativeErrorBody(body: unknown): boolean {
  return errorBody.safeParse(body).success;
}
