import { z } from 'zod';

/**
 * POST /v1/chat/completions for text models: the rules OpenAI itself enforces on the common
 * parameters, checked before an upstream is called. Other fields (tools, response_format,
 * provider-specific options) pass through to the OpenAI-compatible channel unchanged.
 */
const part = z.looseObject({ type: z.string().min(1) });

export const chatTextBody = z
  .looseObject({
    model: z.string().min(1),
    messages: z
      .array(
        z.looseObject({
          role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
          content: z.union([z.string(), z.array(part)]).nullish(),
        }),
      )
      .min(1, 'messages must not be empty'),
    stream: z.boolean().nullish(),
    stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
    n: z.number().int().min(1).max(128).nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().min(0).max(1).nullish(),
    max_tokens: z.number().int().min(1).nullish(),
    max_completion_tokens: z.number().int().min(1).nullish(),
    stop: z.union([z.string(), z.array(z.string()).max(4, 'at most 4 stop sequences')]).nullish(),
    presence_penalty: z.number().min(-2).max(2).nullish(),
    frequency_penalty: z.number().min(-2).max(2).nullish(),
    logit_bias: z.record(z.string().regex(/^\d+$/, 'keys must be token ids'), z.number().min(-100).max(100)).nullish(),
  })
  .refine((b) => b.stream === true || b.stream_options == null, {
    message: 'stream_options is only allowed when stream is true',
    path: ['stream_options'],
  });

export type ChatTextBody = z.infer<typeof chatTextBody>;
