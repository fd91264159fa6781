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

/**
 * The Responses API's Response object (upstreams.md 5): the provider's, relayed with the
 * gateway's own `id` (and `previous_response_id`) and the model as the client named it.
 */
export const responseObject = z.looseObject({
  id: z.string().meta({ description: "The gateway's id (`resp_` + 48 hex), never the provider's." }),
  object: z.literal('response'),
  created_at: unixSeconds,
  status: z.enum(['queued', 'in_progress', 'completed', 'failed', 'cancelled', 'incomplete']),
  model: z.string(),
  background: z.boolean().nullable().optional(),
  previous_response_id: z.string().nullable().optional(),
  output: z.array(z.looseObject({ type: z.string().meta({ description: '`message`, `reasoning`, `function_call`, or a hosted tool call.' }) })),
  usage: z
    .looseObject({
      input_tokens: z.int(),
      input_tokens_details: z.looseObject({ cached_tokens: z.int() }).optional(),
      output_tokens: z.int().meta({ description: 'Reasoning tokens included.' }),
      output_tokens_details: z.looseObject({ reasoning_tokens: z.int() }).optional(),
      total_tokens: z.int(),
    })
    .nullable()
    .optional(),
  error: z.looseObject({ code: z.string().nullable().optional(), message: z.string() }).nullable().optional(),
  incomplete_details: z.looseObject({ reason: z.string().nullable().optional() }).nullable().optional(),
});

/** One Server-Sent Event of a streamed response: `event: <type>` and this as its data. */
export const responseStreamEvent = z.looseObject({
  type: z.string().meta({ description: 'response.created, response.in_progress, response.output_item.added, ..., response.completed; or error.' }),
  sequence_number: z.int(),
});

export const responseDeleted = z.looseObject({ id: z.string(), object: z.literal('response'), deleted: z.literal(true) });
