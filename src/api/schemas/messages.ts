import { z } from 'zod';
import { sniffImage } from '../../net/media';

/**
 * POST /v1/messages (spec 2.4, 4.11, 8). Every rule the spec states is checked here, so a
 * bad request gets a 400 naming the parameter before any upstream is called. Objects are
 * loose: native fields this schema does not know (cache_control, citations, newer options)
 * travel to the upstream unchanged, which judges them itself.
 */
const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;

/** The format of base64 data, from its first bytes (a mislabelled file is caught cheaply). */
function sniffBase64(data: string): string | null {
  const head = Buffer.from(data.slice(0, 24), 'base64');
  if (head.subarray(0, 5).toString('latin1') === '%PDF-') return 'application/pdf';
  return sniffImage(head);
}

function checkBase64(mediaType: string, data: string, ctx: z.RefinementCtx): void {
  let problem: string | null = null;
  if (data.startsWith('data:')) problem = 'must be raw base64, without a data: URL prefix';
  else if (!/^[A-Za-z0-9+/]{4}/.test(data)) problem = 'must be base64';
  else if (sniffBase64(data) !== mediaType) problem = `the data is not a ${mediaType} file`;
  if (problem) ctx.addIssue({ code: 'custom', path: ['data'], message: problem, input: data.slice(0, 16) });
}

const urlSource = z.looseObject({ type: z.literal('url'), url: z.url({ protocol: /^https?$/ }) });

const imageSource = z.discriminatedUnion(
  'type',
  [
    z
      .looseObject({
        type: z.literal('base64'),
        media_type: z.enum(IMAGE_TYPES, { error: `must be one of ${IMAGE_TYPES.join(', ')}` }),
        data: z.string().min(1),
      })
      .superRefine((v, ctx) => checkBase64(v.media_type, v.data, ctx)),
    urlSource,
  ],
  { error: "source.type must be 'base64' or 'url'" },
);

const documentSource = z.discriminatedUnion(
  'type',
  [
    z
      .looseObject({
        type: z.literal('base64'),
        media_type: z.literal('application/pdf', { error: 'PDF is the only supported document format: media_type must be application/pdf' }),
        data: z.string().min(1),
      })
      .superRefine((v, ctx) => checkBase64('application/pdf', v.data, ctx)),
    urlSource,
  ],
  { error: "PDF is the only supported document format: source.type must be 'base64' (application/pdf) or 'url'" },
);

const textBlock = z.looseObject({ type: z.literal('text'), text: z.string() });
const imageBlock = z.looseObject({ type: z.literal('image'), source: imageSource });
const documentBlock = z.looseObject({ type: z.literal('document'), source: documentSource });
const toolResultContent = z.union([
  z.string(),
  z.array(
    z.discriminatedUnion('type', [textBlock, imageBlock, documentBlock, z.looseObject({ type: z.literal('search_result') })], {
      error: 'tool_result content blocks must be text, image, document or search_result',
    }),
  ),
]);

export const CONTENT_BLOCK_TYPES = [
  'text',
  'image',
  'document',
  'tool_use',
  'tool_result',
  'thinking',
  'redacted_thinking',
  'search_result',
  'server_tool_use',
  'web_search_tool_result',
] as const;

const contentBlock = z.discriminatedUnion(
  'type',
  [
    textBlock,
    imageBlock,
    documentBlock,
    z.looseObject({ type: z.literal('tool_use'), id: z.string().min(1), name: z.string().min(1), input: z.record(z.string(), z.unknown()) }),
    z.looseObject({ type: z.literal('tool_result'), tool_use_id: z.string().min(1), content: toolResultContent.optional(), is_error: z.boolean().optional() }),
    z.looseObject({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() }),
    z.looseObject({ type: z.literal('redacted_thinking'), data: z.string() }),
    z.looseObject({ type: z.literal('search_result') }),
    z.looseObject({ type: z.literal('server_tool_use') }),
    z.looseObject({ type: z.literal('web_search_tool_result') }),
  ],
  { error: `content block type must be one of ${CONTENT_BLOCK_TYPES.join(', ')}` },
);

const message = z.looseObject({
  role: z.enum(['user', 'assistant'], { error: "must be 'user' or 'assistant' (the system prompt goes in the top-level 'system')" }),
  content: z.union([z.string(), z.array(contentBlock)], { error: 'must be a string or an array of content blocks' }),
});

const tool = z
  .looseObject({ name: z.string().regex(/^[a-zA-Z0-9_-]{1,128}$/, 'must be 1-128 letters, digits, _ or -') })
  .refine((t) => 'input_schema' in t || 'type' in t, { message: 'a custom tool needs an input_schema' });

const toolChoice = z.discriminatedUnion(
  'type',
  [
    z.looseObject({ type: z.literal('auto') }),
    z.looseObject({ type: z.literal('any') }),
    z.looseObject({ type: z.literal('tool'), name: z.string().min(1) }),
    z.looseObject({ type: z.literal('none') }),
  ],
  { error: "tool_choice.type must be 'auto', 'any', 'tool' or 'none'" },
);

export const THINKING_BUDGET = { min: 1024, max: 32_768 } as const;

const thinking = z.discriminatedUnion(
  'type',
  [
    z.looseObject({ type: z.literal('enabled'), budget_tokens: z.number().int().min(THINKING_BUDGET.min).max(THINKING_BUDGET.max) }),
    z.looseObject({ type: z.literal('disabled') }),
  ],
  { error: "thinking.type must be 'enabled' or 'disabled'" },
);

const penalty = z.number().min(-2).max(2);

const responseFormat = z.discriminatedUnion(
  'type',
  [
    z.strictObject({ type: z.literal('text') }),
    z.strictObject({ type: z.literal('json_object') }),
    z.strictObject({
      type: z.literal('json_schema'),
      json_schema: z.strictObject({
        name: z.string().optional(),
        description: z.string().optional(),
        schema: z.record(z.string(), z.unknown()).optional(),
        strict: z.boolean().nullish(),
      }),
    }),
  ],
  { error: "response_format.type must be 'text', 'json_object' or 'json_schema'" },
);

export const messagesBody = z
  .looseObject({
    model: z.string().min(1),
    messages: z.array(message).min(1, 'must contain at least one message'),
    max_tokens: z.number().int().min(1),
    // native options (spec 4.11)
    system: z.union([z.string(), z.array(textBlock)], { error: 'must be a string or an array of text blocks' }).optional(),
    temperature: z.number().min(0).max(1).optional(),
    top_p: z.number().min(0).max(1).optional(),
    top_k: z.number().int().min(0).optional(),
    stream: z.boolean().optional(),
    stop_sequences: z.array(z.string().min(1)).optional(),
    tools: z.array(tool).optional(),
    tool_choice: toolChoice.optional(),
    metadata: z.looseObject({ user_id: z.string().max(256).nullish() }).optional(),
    thinking: thinking.optional(),
    // compatibility extensions (spec 4.11): mapped or dropped before the upstream sees them
    n: z.number().int().min(1).max(1, 'only n = 1 is supported: the native API returns one message').optional(),
    stop: z.union([z.string().min(1), z.array(z.string().min(1)).max(4, 'at most 4 stop sequences')]).nullish(),
    presence_penalty: penalty.optional(),
    frequency_penalty: penalty.optional(),
    logit_bias: z.record(z.string().regex(/^\d+$/, 'keys must be token ids'), z.number().min(-100).max(100)).optional(),
    user: z.string().max(256).optional(),
    response_format: responseFormat.optional(),
    seed: z.number().int().optional(),
  })
  .superRefine((body, ctx) => {
    if (body.thinking?.type === 'enabled' && body.thinking.budget_tokens >= body.max_tokens) {
      ctx.addIssue({
        code: 'custom',
        path: ['thinking', 'budget_tokens'],
        message: `must be less than max_tokens (${body.max_tokens})`,
        input: body.thinking.budget_tokens,
      });
    }
    if (body.thinking?.type === 'enabled' && body.temperature !== undefined && body.temperature !== 1) {
      ctx.addIssue({ code: 'custom', path: ['temperature'], message: 'may only be 1 (or unset) while thinking is enabled', input: body.temperature });
    }
  });

export type MessagesBody = z.infer<typeof messagesBody>;

/**
 * POST /v1/messages/count_tokens: what Anthropic's endpoint takes (the messages of a request,
 * without max_tokens and the sampling options), checked as /v1/messages checks them.
 */
export const countTokensBody = z.looseObject({
  model: z.string().min(1),
  messages: z.array(message).min(1, 'must contain at least one message'),
  system: z.union([z.string(), z.array(textBlock)], { error: 'must be a string or an array of text blocks' }).optional(),
  tools: z.array(tool).optional(),
  tool_choice: toolChoice.optional(),
  thinking: thinking.optional(),
});
