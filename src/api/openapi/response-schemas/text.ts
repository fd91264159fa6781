import { z } from 'zod';
import type { chatChunk, chatCompletion } from '../../views/chat-video';
import { admits } from '../describes';
import { unixSeconds } from './common';

/**
 * The text answers. Text models' answers are the provider's, relayed unchanged: these schemas
 * name the fields every answer has and admit the rest (`additionalProperties`). A motion model's
 * answer on /v1/chat/completions (views/chat-video.ts) is one of them too.
 */

const usage = z.looseObject({ prompt_tokens: z.int(), completion_tokens: z.int(), total_tokens: z.int() });

export const chatCompletionObject = admits<ReturnType<typeof chatCompletion>>()(
  z.looseObject({
    id: z.string(),
    object: z.literal('chat.completion'),
    created: unixSeconds,
    model: z.string(),
    choices: z.array(
      z.looseObject({
        index: z.int(),
        message: z.looseObject({ role: z.literal('assistant'), content: z.string().nullable() }),
        finish_reason: z.string().nullable(),
      }),
    ),
    usage: usage.optional(),
  }),
);

/** One `data:` event of a chat completion stream. */
export const chatCompletionChunk = admits<ReturnType<typeof chatChunk>>()(
  z.looseObject({
    id: z.string(),
    object: z.literal('chat.completion.chunk'),
    created: unixSeconds,
    model: z.string(),
    choices: z.array(
      z.looseObject({
        index: z.int(),
        delta: z.looseObject({ role: z.literal('assistant').optional(), content: z.string().nullable().optional() }),
        finish_reason: z.string().nullable(),
      }),
    ),
    usage: usage.nullable().optional().meta({ description: 'The usage chunk (choices: []), sent when stream_options.include_usage is set.' }),
  }),
);

/** The provider's Message, unchanged (spec 2.4). */
export const anthropicMessage = z.looseObject({
  id: z.string(),
  type: z.literal('message'),
  role: z.literal('assistant'),
  model: z.string().meta({ description: "The provider's model id." }),
  content: z.array(z.looseObject({ type: z.string() })),
  stop_reason: z.string().nullable(),
  stop_sequence: z.string().nullable().optional(),
  usage: z.looseObject({
    input_tokens: z.int(),
    output_tokens: z.int(),
    cache_creation_input_tokens: z.int().nullable().optional(),
    cache_read_input_tokens: z.int().nullable().optional(),
  }),
});

export const tokenCount = z.looseObject({ input_tokens: z.int() });
