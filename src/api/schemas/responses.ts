import { z } from 'zod';

/**
 * POST /v1/responses (upstreams.md 5): the parameters of OpenAI's Responses API the gateway
 * knows, with the rules OpenAI enforces on them; anything else is a 400 naming it. Input items,
 * tools and content parts are checked for their shape (a type, a role) and passed on unchanged.
 */
const part = z.looseObject({ type: z.string().min(1) });
const messageItem = z.looseObject({
  type: z.literal('message').optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: z.union([z.string(), z.array(part)]),
});
const otherItem = z.looseObject({
  type: z
    .string()
    .min(1)
    .refine((t) => t !== 'message', 'a message item needs a role and content'),
});
const inputItem = z.union([messageItem, otherItem]);

const functionTool = z.looseObject({ type: z.literal('function'), name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'letters, digits, _ and -, at most 64') });
const hostedTool = z.looseObject({
  type: z
    .string()
    .min(1)
    .refine((t) => t !== 'function', 'a function tool needs a name'),
});

export const responsesBody = z.strictObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(inputItem)]).optional(),
  instructions: z.string().nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_obfuscation: z.boolean().optional() }).nullish(),
  background: z.boolean().nullish(),
  store: z.boolean().nullish(),
  tools: z.array(z.union([functionTool, hostedTool])).optional(),
  tool_choice: z.union([z.enum(['none', 'auto', 'required']), z.looseObject({ type: z.string().min(1) })]).optional(),
  parallel_tool_calls: z.boolean().nullish(),
  max_tool_calls: z.number().int().min(1).nullish(),
  reasoning: z
    .looseObject({
      effort: z.enum(['minimal', 'low', 'medium', 'high']).nullish(),
      summary: z.enum(['auto', 'concise', 'detailed']).nullish(),
    })
    .nullish(),
  max_output_tokens: z.number().int().min(16, 'must be at least 16').nullish(),
  previous_response_id: z.string().min(1).nullish(),
  metadata: z.record(z.string().max(64), z.string().max(512)).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  text: z.looseObject({}).nullish(),
  truncation: z.enum(['auto', 'disabled']).nullish(),
  include: z.array(z.string()).nullish(),
  user: z.string().nullish(),
  service_tier: z.string().nullish(),
  prompt_cache_key: z.string().nullish(),
  safety_identifier: z.string().nullish(),
  /** The gateway's own: where the completion webhook of a background response goes (README "Completion webhooks"). */
  callback_url: z.string().min(1).max(2048).optional(),
});

export type ResponsesBody = z.infer<typeof responsesBody>;
