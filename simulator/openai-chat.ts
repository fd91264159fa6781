/**
 * OpenAI Chat Completions (`POST /v1/chat/completions`): the upstream of the gateway's other text
 * models. Answers are deterministic echoes of the last user message (same rules as the Anthropic
 * module), streamed as `chat.completion.chunk`s ending with `data: [DONE]`. Auth and the error
 * shape are the OpenAI Videos module's. Faults: markers in the last user message (faults.ts).
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Ctx, HeaderMap, ProtocolModule, Reply } from './server';
import { echoText, type TextMarkers, textFaults } from './faults';
import { sseReply } from './sse';
import { openaiVideosModule } from './openai-videos';
import { pieces, tokensFor } from './anthropic-messages';

const textPart = z.object({ type: z.literal('text'), text: z.string() });
const part = z.discriminatedUnion('type', [
  textPart,
  z.object({ type: z.literal('image_url'), image_url: z.object({ url: z.string().min(1), detail: z.enum(['auto', 'low', 'high']).optional() }) }),
  z.object({ type: z.literal('input_audio'), input_audio: z.object({ data: z.string(), format: z.string() }) }),
  z.object({ type: z.literal('file'), file: z.object({ file_data: z.string().optional(), file_id: z.string().optional(), filename: z.string().optional() }) }),
  z.object({ type: z.literal('refusal'), refusal: z.string() }),
]);
const toolCall = z.object({ id: z.string(), type: z.literal('function'), function: z.object({ name: z.string(), arguments: z.string() }) });
const message = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z.union([z.string(), z.array(part)]).nullish(),
  name: z.string().optional(),
  tool_calls: z.array(toolCall).optional(),
  tool_call_id: z.string().optional(),
  refusal: z.string().nullish(),
});
const fnTool = z.object({
  type: z.literal('function'),
  function: z.object({
    name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullish(),
  }),
});
const loose = z.unknown().optional();

const chatSchema = z.strictObject({
  model: z.string().min(1),
  messages: z.array(message).min(1),
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().optional(), include_obfuscation: z.boolean().optional() }).nullish(),
  tools: z.array(fnTool).optional(),
  tool_choice: z.union([z.enum(['none', 'auto', 'required']), z.object({ type: z.literal('function'), function: z.object({ name: z.string() }) })]).optional(),
  parallel_tool_calls: z.boolean().optional(),
  max_tokens: z.number().int().min(1).nullish(),
  max_completion_tokens: z.number().int().min(1).nullish(),
  stop: z.union([z.string(), z.array(z.string()).max(4)]).nullish(),
  n: z.literal(1).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  // Accepted and ignored.
  frequency_penalty: loose,
  presence_penalty: loose,
  logit_bias: loose,
  logprobs: loose,
  top_logprobs: loose,
  response_format: loose,
  seed: loose,
  user: loose,
  metadata: loose,
  store: loose,
  reasoning_effort: loose,
  service_tier: loose,
  modalities: loose,
  prediction: loose,
  audio: loose,
  verbosity: loose,
  safety_identifier: loose,
  prompt_cache_key: loose,
  web_search_options: loose,
});
type ChatRequest = z.infer<typeof chatSchema>;

function contentText(content: ChatRequest['messages'][number]['content']): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n');
}

function lastUserText(messages: ChatRequest['messages']): string {
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const m = messages[i];
    if (m && m.role === 'user') return contentText(m.content);
  }
  return '';
}

function hex(n: number): string {
  return randomUUID().replace(/-/g, '').slice(0, n);
}

interface ToolCallOut {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}
interface Answer {
  text: string | null;
  toolCall: ToolCallOut | null;
  finishReason: 'stop' | 'length' | 'tool_calls';
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

function answer(body: ChatRequest, prompt: string, t: TextMarkers): Answer {
  let inChars = body.messages.reduce((s, m) => s + contentText(m.content).length, 0);
  if (body.tools) inChars += JSON.stringify(body.tools).length;
  const promptTokens = Math.max(1, tokensFor(inChars));
  const usage = (out: number) => ({ prompt_tokens: promptTokens, completion_tokens: out, total_tokens: promptTokens + out });
  const tools = body.tools ?? [];
  const choice = body.tool_choice;
  const forced = choice === 'required' || typeof choice === 'object';
  if (tools.length > 0 && choice !== 'none' && (t.tool || forced)) {
    const chosen = (typeof choice === 'object' ? tools.find((x) => x.function.name === choice.function.name) : undefined) ?? tools[0];
    if (chosen) {
      const args = '{}';
      const call: ToolCallOut = { id: `call_${hex(24)}`, type: 'function', function: { name: chosen.function.name, arguments: args } };
      return { text: null, toolCall: call, finishReason: 'tool_calls', usage: usage(Math.max(1, tokensFor(chosen.function.name.length + args.length))) };
    }
  }
  let text = echoText(prompt, t);
  let finishReason: Answer['finishReason'] = 'stop';
  const stops = typeof body.stop === 'string' ? [body.stop] : (body.stop ?? []);
  for (const s of stops) {
    const at = s === '' ? -1 : text.indexOf(s);
    if (at >= 0) text = text.slice(0, at);
  }
  const limit = body.max_completion_tokens ?? body.max_tokens;
  if (limit !== null && limit !== undefined && text.length > limit * 4) {
    text = text.slice(0, limit * 4);
    finishReason = 'length';
  }
  return { text, toolCall: null, finishReason, usage: usage(Math.max(1, tokensFor(text.length))) };
}

const FINGERPRINT = 'fp_simulator';

function streamReply(body: ChatRequest, a: Answer, t: TextMarkers, slowMs: number, created: number): Reply {
  const id = `chatcmpl-${hex(24)}`;
  const includeUsage = body.stream_options?.include_usage === true;
  const chunk = (delta: Record<string, unknown>, finish: string | null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model: body.model,
    system_fingerprint: FINGERPRINT,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...(includeUsage ? { usage: null } : {}),
  });
  const chunks: unknown[] = [chunk({ role: 'assistant', content: a.toolCall ? null : '', refusal: null }, null)];
  if (a.toolCall) {
    const call = a.toolCall;
    chunks.push(chunk({ tool_calls: [{ index: 0, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] }, null));
    for (const p of pieces(call.function.arguments)) chunks.push(chunk({ tool_calls: [{ index: 0, function: { arguments: p } }] }, null));
  } else {
    for (const p of pieces(a.text ?? '')) chunks.push(chunk({ content: p }, null));
  }
  chunks.push(chunk({}, a.finishReason));
  if (includeUsage) {
    chunks.push({ id, object: 'chat.completion.chunk', created, model: body.model, system_fingerprint: FINGERPRINT, choices: [], usage: a.usage });
  }
  const data = (v: unknown): string => `data: ${JSON.stringify(v)}\n\n`;
  // midstream-error: the role chunk and about half of the content chunks, then the error line.
  const failAt = t.midstreamError ? Math.max(2, Math.ceil((chunks.length - 1) / 2)) : -1;
  const errorFrame = data({
    error: {
      message: 'The server had an error while processing your request (simulated by [sim:midstream-error]).',
      type: 'server_error',
      param: null,
      code: null,
    },
  });
  return sseReply({ frames: chunks.map(data), failAt, errorFrame, trailer: 'data: [DONE]\n\n' }, t, slowMs);
}

function zodError(ctx: Ctx, error: z.ZodError, input: Record<string, unknown>): Reply {
  const issue = error.issues[0];
  if (!issue) return ctx.error(400, 'Invalid request.');
  if (issue.code === 'unrecognized_keys') {
    return ctx.error(400, `Unrecognized request argument supplied: ${issue.keys[0] ?? ''}`, { param: issue.keys[0] ?? null, code: 'unknown_parameter' });
  }
  const param = issue.path.map(String).join('.');
  const top = String(issue.path[0] ?? '');
  if (issue.path.length === 1 && input[top] === undefined) {
    return ctx.error(400, `Missing required parameter: '${param}'.`, { param, code: 'missing_required_parameter' });
  }
  return ctx.error(400, `Invalid '${param}': ${issue.message}.`, { param, code: 'invalid_value' });
}

/** Models of the other providers: OpenAI's text APIs do not know them. */
const NOT_OPENAI_TEXT = /^(claude-|cm-|sora-|veo-)/;

/**
 * A JSON create body checked against `schema` (OpenAI's wording for its first problem), with an
 * OpenAI text model: the body, or the error reply. Shared with the Responses module.
 */
export async function readOpenAiTextBody<T extends { model: string }>(ctx: Ctx, schema: z.ZodType<T>): Promise<{ body: T } | { reply: Reply }> {
  const raw = await ctx.body();
  if (raw.kind !== 'json' || typeof raw.value !== 'object' || raw.value === null || Array.isArray(raw.value)) {
    return { reply: ctx.error(400, 'The request body must be a JSON object.') };
  }
  const input = raw.value as Record<string, unknown>;
  const parsed = schema.safeParse(input);
  if (!parsed.success) return { reply: zodError(ctx, parsed.error, input) };
  const model = parsed.data.model;
  if (NOT_OPENAI_TEXT.test(model)) {
    return { reply: ctx.error(404, `The model \`${model}\` does not exist or you do not have access to it.`, { param: 'model', code: 'model_not_found' }) };
  }
  return { body: parsed.data };
}

async function createCompletion(ctx: Ctx): Promise<Reply> {
  const read = await readOpenAiTextBody(ctx, chatSchema);
  if ('reply' in read) return read.reply;
  const body = read.body;
  const prompt = lastUserText(body.messages);
  const { markers, t, fault } = textFaults(ctx, prompt);
  if (fault) return fault;

  const a = answer(body, prompt, t);
  ctx.sim.stats.textRequest(a.usage.prompt_tokens, a.usage.completion_tokens);
  const created = Math.floor(ctx.now / 1000);
  if (body.stream === true) {
    if (t.midstreamError) ctx.sim.stats.fault('midstream-error');
    if (t.hang) ctx.sim.stats.fault('hang');
    return streamReply(body, a, t, markers.slowMs, created);
  }
  return {
    kind: 'json',
    status: 200,
    delayMs: markers.slowMs,
    body: {
      id: `chatcmpl-${hex(24)}`,
      object: 'chat.completion',
      created,
      model: body.model,
      system_fingerprint: FINGERPRINT,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: a.text, refusal: null, annotations: [], ...(a.toolCall ? { tool_calls: [a.toolCall] } : {}) },
          logprobs: null,
          finish_reason: a.finishReason,
        },
      ],
      usage: a.usage,
    },
  };
}

export const openaiChatModule: ProtocolModule = {
  name: 'openai-chat',
  prefixes: ['/v1/chat/'],
  upstream: true,
  error: openaiVideosModule.error,
  authenticate: (ctx) => openaiVideosModule.authenticate?.(ctx) ?? null,
  responseHeaders: (): HeaderMap => ({ 'x-request-id': `req_${hex(32)}` }),
  routes: [{ name: 'openai.chat.completions', method: 'POST', path: /^\/v1\/chat\/completions$/, handle: createCompletion }],
};
