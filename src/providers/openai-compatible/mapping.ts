import { z } from 'zod';
import { emptyUsage, stringFieldBytes, type StreamTap, type TextUsage } from '../usage';

/**
 * Chat completions (upstreams.md 4). The gateway always asks a streamed upstream for its
 * usage chunk (billing needs it); a client that did not ask for it does not get it.
 */
const usageSchema = z.object({
  prompt_tokens: z.number().int().nonnegative().nullish(),
  completion_tokens: z.number().int().nonnegative().nullish(),
  prompt_tokens_details: z.object({ cached_tokens: z.number().int().nonnegative().nullish() }).nullish(),
});

function toUsage(u: z.infer<typeof usageSchema>): TextUsage {
  const cached = u.prompt_tokens_details?.cached_tokens ?? 0;
  const prompt = u.prompt_tokens ?? 0;
  return { inputTokens: Math.max(0, prompt - cached), outputTokens: u.completion_tokens ?? 0, cacheCreationTokens: 0, cacheReadTokens: cached };
}

const completionBody = z.object({ usage: usageSchema.nullish() });

export function usageOfCompletion(body: unknown): TextUsage | null {
  const parsed = completionBody.safeParse(body);
  return parsed.success && parsed.data.usage ? toUsage(parsed.data.usage) : null;
}

/** The upstream body: the client's, with the model mapped and the usage chunk requested when streaming. */
export function toUpstreamChatBody(body: Record<string, unknown>, upstreamModel: string): Record<string, unknown> | null {
  const streamOptions = body.stream_options as { include_usage?: boolean } | null | undefined;
  const needsUsage = body.stream === true && streamOptions?.include_usage !== true;
  if (!needsUsage && body.model === upstreamModel) return null;
  const out: Record<string, unknown> = { ...body, model: upstreamModel };
  if (needsUsage) out.stream_options = { ...(streamOptions ?? {}), include_usage: true };
  return out;
}

/** The fields of a chunk's delta (or a completion's message) that carry generated text. */
export const GENERATED_FIELDS = ['content', 'reasoning_content', 'reasoning', 'refusal', 'arguments'] as const;

const usageChunk = z.object({ choices: z.array(z.unknown()), usage: usageSchema.nullish() });

export function chatErrorData(message: string): string {
  return `data: ${JSON.stringify({ error: { message, type: 'server_error', param: null, code: 'upstream_stream_broken' } })}\n\n`;
}

/**
 * Follows a chunk stream: the usage chunk (choices [] and usage) is read for billing and,
 * unless the client asked for it, not forwarded; `[DONE]` or an error line is the end.
 */
export class ChatStreamTap implements StreamTap {
  usage: TextUsage = emptyUsage();
  ended = false;
  errored = false;
  relayedOutputBytes = 0;

  readonly dropsEvents: boolean;

  constructor(private readonly clientWantsUsage: boolean) {
    this.dropsEvents = !clientWantsUsage;
  }

  onEvent(_name: string | null, data: string): boolean {
    if (data === '[DONE]') {
      this.ended = true;
      return true;
    }
    // Cheap string checks first: only the last chunk carries a usage object.
    if (data.includes('"usage":{') || data.includes('"usage": {')) {
      try {
        const parsed = usageChunk.safeParse(JSON.parse(data));
        if (parsed.success && parsed.data.usage) {
          this.usage = toUsage(parsed.data.usage);
          if (parsed.data.choices.length === 0) return this.clientWantsUsage;
        }
      } catch {
        // not JSON: forwarded as it is
      }
    } else if (data.startsWith('{"error"') || data.startsWith('{ "error"')) {
      this.ended = true;
      this.errored = true;
    } else {
      this.relayedOutputBytes += stringFieldBytes(data, GENERATED_FIELDS);
    }
    return true;
  }

  breakOff(message: string): string {
    return chatErrorData(message);
  }
}
