/**
 * OpenAI Responses API (`/v1/responses`, upstreams.md 5): the upstream of the responses-only
 * models. Create (plain, streamed with the full event sequence, or `background: true`), retrieve,
 * cancel and delete. Answers are the same deterministic echoes as the chat module's; reasoning
 * models (and any request naming `reasoning`) add a reasoning item, and function tools with
 * `[sim:tool]` (or a tool_choice that forces one) answer a function_call item. Auth, the error
 * shape and the text faults (markers in the last user message) are the chat module's.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Ctx, HeaderMap, ProtocolModule, Reply } from './server';
import { echoText, type TextMarkers, textFaults } from './faults';
import { sseReply } from './sse';
import { openaiVideosModule } from './openai-videos';
import { readOpenAiTextBody } from './openai-chat';
import { pieces, tokensFor } from './anthropic-messages';
import { responseId } from './job-ids';
import { isDone, statusOf, terminalAt, type SimResponse } from './responses-store';

const inputPart = z.union([
  z.object({ type: z.literal('input_text'), text: z.string() }),
  z.object({ type: z.literal('output_text'), text: z.string() }),
  z.object({ type: z.literal('refusal'), refusal: z.string() }),
  z.object({
    type: z.literal('input_image'),
    image_url: z.string().nullish(),
    file_id: z.string().nullish(),
    detail: z.enum(['auto', 'low', 'high']).optional(),
  }),
  z.object({
    type: z.literal('input_file'),
    file_id: z.string().nullish(),
    file_data: z.string().optional(),
    file_url: z.string().optional(),
    filename: z.string().optional(),
  }),
]);
const messageItem = z.object({
  type: z.literal('message').optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: z.union([z.string(), z.array(inputPart)]),
  id: z.string().optional(),
  status: z.string().optional(),
});
const inputItem = z.union([
  messageItem,
  z.object({
    type: z.literal('function_call_output'),
    call_id: z.string().min(1),
    output: z.union([z.string(), z.array(z.unknown())]),
    id: z.string().nullish(),
  }),
  z.object({ type: z.literal('function_call'), call_id: z.string().min(1), name: z.string(), arguments: z.string(), id: z.string().optional() }),
  z.object({ type: z.literal('reasoning'), id: z.string(), summary: z.array(z.unknown()), encrypted_content: z.string().nullish() }),
  z.object({ type: z.literal('item_reference'), id: z.string() }),
]);
const functionTool = z.object({
  type: z.literal('function'),
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});
// Hosted tools (web_search, file_search, ...) are accepted as they are and never called here.
const tool = z.union([functionTool, z.object({ type: z.string().regex(/^(?!function$)/) }).loose()]);
const loose = z.unknown().optional();

const createSchema = z.strictObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(inputItem)]).optional(),
  instructions: z.string().nullish(),
  stream: z.boolean().nullish(),
  background: z.boolean().nullish(),
  store: z.boolean().nullish(),
  tools: z.array(tool).optional(),
  tool_choice: z
    .union([z.enum(['none', 'auto', 'required']), z.object({ type: z.literal('function'), name: z.string() }), z.object({ type: z.string() }).loose()])
    .optional(),
  reasoning: z.object({ effort: z.enum(['minimal', 'low', 'medium', 'high']).nullish(), summary: z.enum(['auto', 'concise', 'detailed']).nullish() }).nullish(),
  max_output_tokens: z.number().int().min(16).nullish(),
  previous_response_id: z.string().nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  // Accepted and ignored.
  text: loose,
  truncation: loose,
  user: loose,
  include: loose,
  service_tier: loose,
  prompt_cache_key: loose,
  safety_identifier: loose,
  max_tool_calls: loose,
  top_logprobs: loose,
  stream_options: loose,
  prompt: loose,
  conversation: loose,
});
type CreateRequest = z.infer<typeof createSchema>;
type InputItem = z.infer<typeof inputItem>;

/** Models that think before they answer: their responses carry a reasoning item. */
const REASONING_MODEL = /^(o\d|gpt-5|codex-|computer-use)/;

function hex(n: number): string {
  return (randomUUID() + randomUUID()).replace(/-/g, '').slice(0, n);
}

function itemText(item: InputItem): string {
  if ('role' in item) {
    if (typeof item.content === 'string') return item.content;
    return item.content.flatMap((p) => ('text' in p ? [p.text] : [])).join('\n');
  }
  if (item.type === 'function_call_output') return typeof item.output === 'string' ? item.output : JSON.stringify(item.output);
  if (item.type === 'function_call') return item.arguments;
  return '';
}

function lastUserText(input: CreateRequest['input']): string {
  if (input === undefined) return '';
  if (typeof input === 'string') return input;
  for (let i = input.length - 1; i >= 0; i -= 1) {
    const item = input[i];
    if (item && 'role' in item && item.role === 'user') return itemText(item);
  }
  return '';
}

function inputChars(body: CreateRequest): number {
  const input = body.input ?? '';
  let chars = typeof input === 'string' ? input.length : input.reduce((s, item) => s + itemText(item).length, 0);
  chars += body.instructions?.length ?? 0;
  if (body.tools) chars += JSON.stringify(body.tools).length;
  return chars;
}

interface Answer {
  output: Array<Record<string, unknown>>;
  finish: 'completed' | 'incomplete';
  inputTokens: number;
  textTokens: number;
  reasoningTokens: number;
}

function reasoningItem(body: CreateRequest, prompt: string): Record<string, unknown> {
  const summary = body.reasoning?.summary ? [{ type: 'summary_text', text: `**Thinking** about: ${prompt.slice(0, 60)}` }] : [];
  return { id: `rs_${hex(48)}`, type: 'reasoning', summary };
}

function answer(body: CreateRequest, prompt: string, t: TextMarkers): Answer {
  const inputTokens = Math.max(1, tokensFor(inputChars(body)));
  const thinks = REASONING_MODEL.test(body.model) || (body.reasoning !== undefined && body.reasoning !== null);
  const output: Array<Record<string, unknown>> = thinks ? [reasoningItem(body, prompt)] : [];
  // Deterministic: a reasoning model "thinks" in proportion to its prompt.
  const reasoningTokens = thinks ? 8 + tokensFor(prompt.length) : 0;
  const functions = (body.tools ?? []).flatMap((x) => (x.type === 'function' && 'name' in x ? [x as z.infer<typeof functionTool>] : []));
  const choice = body.tool_choice;
  const named = typeof choice === 'object' && choice.type === 'function' && 'name' in choice ? String(choice.name) : null;
  const forced = choice === 'required' || named !== null;
  if (functions.length > 0 && choice !== 'none' && (t.tool || forced)) {
    const chosen = functions.find((f) => f.name === named) ?? functions[0];
    if (chosen) {
      const args = '{}';
      output.push({ id: `fc_${hex(48)}`, type: 'function_call', status: 'completed', arguments: args, call_id: `call_${hex(24)}`, name: chosen.name });
      return { output, finish: 'completed', inputTokens, textTokens: Math.max(1, tokensFor(chosen.name.length + args.length)), reasoningTokens };
    }
  }
  let text = echoText(prompt, t);
  let finish: Answer['finish'] = 'completed';
  const limit = body.max_output_tokens;
  if (limit !== null && limit !== undefined && text.length > limit * 4) {
    text = text.slice(0, limit * 4);
    finish = 'incomplete';
  }
  output.push({
    id: `msg_${hex(48)}`,
    type: 'message',
    status: finish === 'completed' ? 'completed' : 'incomplete',
    role: 'assistant',
    content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
  });
  return { output, finish, inputTokens, textTokens: Math.max(1, tokensFor(text.length)), reasoningTokens };
}

function usageOf(r: SimResponse): Record<string, unknown> {
  const f = r.facts;
  const out = f.textTokens + f.reasoningTokens;
  return {
    input_tokens: f.inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: out,
    output_tokens_details: { reasoning_tokens: f.reasoningTokens },
    total_tokens: f.inputTokens + out,
  };
}

/** The Response object as it reads at `now`; `inFlight` forces the in-progress view a stream starts with. */
export function responseObject(r: SimResponse, now: number, inFlight = false): Record<string, unknown> {
  const status = inFlight ? 'in_progress' : statusOf(r, now);
  const done = isDone(status);
  const e = r.echo;
  return {
    id: r.id,
    object: 'response',
    created_at: Math.floor(r.facts.createdAt / 1000),
    status,
    background: r.facts.background,
    error: status === 'failed' ? { code: 'server_error', message: 'The response failed (simulated by a [sim:fail] marker).' } : null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: e.instructions ?? null,
    max_output_tokens: e.max_output_tokens ?? null,
    model: r.model,
    output: status === 'completed' || status === 'incomplete' ? r.output : [],
    parallel_tool_calls: e.parallel_tool_calls ?? true,
    previous_response_id: e.previous_response_id ?? null,
    reasoning: { effort: null, summary: null, ...(e.reasoning ?? {}) },
    service_tier: 'default',
    store: e.store ?? true,
    temperature: e.temperature ?? 1,
    text: { format: { type: 'text' } },
    tool_choice: e.tool_choice ?? 'auto',
    tools: e.tools ?? [],
    top_p: e.top_p ?? 1,
    truncation: 'disabled',
    usage: done && status !== 'cancelled' ? usageOf(r) : null,
    user: null,
    metadata: e.metadata ?? {},
  };
}

// ---------------------------------------------------------------------------------------------
// Streaming: the event sequence of upstreams.md 5
// ---------------------------------------------------------------------------------------------

type Event = Record<string, unknown> & { type: string };

function itemEvents(item: Record<string, unknown>, outputIndex: number): Event[] {
  const itemId = String(item.id);
  const at = { item_id: itemId, output_index: outputIndex };
  const events: Event[] = [];
  if (item.type === 'reasoning') {
    events.push({ type: 'response.output_item.added', output_index: outputIndex, item: { ...item, summary: [] } });
    const summary = (item.summary as Array<{ text: string }>) ?? [];
    summary.forEach((part, i) => {
      const s = { ...at, summary_index: i };
      events.push({ type: 'response.reasoning_summary_part.added', ...s, part: { type: 'summary_text', text: '' } });
      for (const delta of pieces(part.text)) events.push({ type: 'response.reasoning_summary_text.delta', ...s, delta });
      events.push({ type: 'response.reasoning_summary_text.done', ...s, text: part.text });
      events.push({ type: 'response.reasoning_summary_part.done', ...s, part: { type: 'summary_text', text: part.text } });
    });
  } else if (item.type === 'function_call') {
    const args = String(item.arguments);
    events.push({ type: 'response.output_item.added', output_index: outputIndex, item: { ...item, status: 'in_progress', arguments: '' } });
    for (const delta of pieces(args)) events.push({ type: 'response.function_call_arguments.delta', ...at, delta });
    events.push({ type: 'response.function_call_arguments.done', ...at, arguments: args });
  } else {
    const part = (item.content as Array<{ text: string }>)[0] ?? { text: '' };
    const c = { ...at, content_index: 0 };
    events.push({ type: 'response.output_item.added', output_index: outputIndex, item: { ...item, status: 'in_progress', content: [] } });
    events.push({ type: 'response.content_part.added', ...c, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } });
    for (const delta of pieces(part.text)) events.push({ type: 'response.output_text.delta', ...c, delta, logprobs: [] });
    events.push({ type: 'response.output_text.done', ...c, text: part.text, logprobs: [] });
    events.push({ type: 'response.content_part.done', ...c, part });
  }
  events.push({ type: 'response.output_item.done', output_index: outputIndex, item });
  return events;
}

export function streamEvents(r: SimResponse, now: number): Event[] {
  const start = responseObject(r, now, true);
  const end = responseObject(r, now);
  const events: Event[] = [
    { type: 'response.created', response: start },
    { type: 'response.in_progress', response: start },
    ...r.output.flatMap((item, i) => itemEvents(item, i)),
    { type: end.status === 'incomplete' ? 'response.incomplete' : 'response.completed', response: end },
  ];
  return events.map((e, i) => ({ ...e, sequence_number: i }));
}

const frame = (e: Event): string => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;

function streamReply(r: SimResponse, now: number, t: TextMarkers, slowMs: number): Reply {
  const events = streamEvents(r, now);
  // midstream-error: the created/in-progress events and about half of the rest, then `error`.
  const failAt = t.midstreamError ? Math.max(2, Math.ceil((events.length - 1) / 2)) : -1;
  const errorFrame = frame({
    type: 'error',
    code: 'server_error',
    message: 'The server had an error while processing your request (simulated by [sim:midstream-error]).',
    param: null,
    sequence_number: Math.max(0, failAt),
  });
  return sseReply({ frames: events.map(frame), failAt, errorFrame }, t, slowMs);
}

// ---------------------------------------------------------------------------------------------
// Routes
// ---------------------------------------------------------------------------------------------

function notFound(ctx: Ctx, id: string): Reply {
  return ctx.error(404, `Response with id '${id}' not found.`, { param: 'response_id', code: null });
}

function json(body: unknown): Reply {
  return { kind: 'json', status: 200, body };
}

async function createResponse(ctx: Ctx): Promise<Reply> {
  const read = await readOpenAiTextBody(ctx, createSchema);
  if ('reply' in read) return read.reply;
  const body = read.body;
  if (body.input === undefined && !body.previous_response_id) {
    return ctx.error(400, "Missing required parameter: 'input'.", { param: 'input', code: 'missing_required_parameter' });
  }
  if (body.background === true && body.stream === true) {
    // A background stream would have to outlive its connection; the simulator does not offer it.
    return ctx.error(400, 'The simulator does not stream background responses: poll GET /v1/responses/{id} instead.', {
      param: 'stream',
      code: 'unsupported_value',
    });
  }
  if (body.background === true && body.store === false) {
    return ctx.error(400, 'Background mode requires store=true.', { param: 'background', code: 'invalid_value' });
  }
  if (body.previous_response_id && !ctx.sim.responses.get(body.previous_response_id)) {
    return ctx.error(400, `Previous response with id '${body.previous_response_id}' not found.`, {
      param: 'previous_response_id',
      code: 'previous_response_not_found',
    });
  }
  const prompt = lastUserText(body.input);
  const { markers, t, fault } = textFaults(ctx, prompt);
  if (fault) return fault;

  const a = answer(body, prompt, t);
  ctx.sim.stats.textRequest(a.inputTokens, a.textTokens + a.reasoningTokens);
  const background = body.background === true;
  const facts = {
    createdAt: ctx.now,
    durationMs: background ? (markers.jobMs ?? ctx.sim.options.jobMs) : 0,
    failed: background && markers.fail,
    background,
    reasoning: a.reasoningTokens > 0,
    stored: body.store !== false || background,
    inputTokens: a.inputTokens,
    textTokens: a.textTokens,
    reasoningTokens: a.reasoningTokens,
  };
  const { input: _input, stream: _stream, ...echo } = body;
  const r: SimResponse = { id: responseId(facts), facts, model: body.model, echo, output: a.output, finish: a.finish, cancelledAt: null, recovered: false };
  if (facts.stored) ctx.sim.responses.add(r);

  if (body.stream === true) {
    if (t.midstreamError) ctx.sim.stats.fault('midstream-error');
    if (t.hang) ctx.sim.stats.fault('hang');
    return streamReply(r, ctx.now, t, markers.slowMs);
  }
  return { ...json(responseObject(r, ctx.now)), delayMs: markers.slowMs };
}

function retrieve(ctx: Ctx): Reply {
  const id = ctx.params[0] ?? '';
  const r = ctx.sim.responses.get(id);
  return r ? json(responseObject(r, ctx.now)) : notFound(ctx, id);
}

function cancel(ctx: Ctx): Reply {
  const id = ctx.params[0] ?? '';
  const r = ctx.sim.responses.get(id);
  if (!r) return notFound(ctx, id);
  if (!r.facts.background) return ctx.error(400, 'Only responses created with background=true can be cancelled.', { param: null, code: null });
  // A finished response stays as it ended; cancelling it again changes nothing.
  if (ctx.now < terminalAt(r) && r.cancelledAt === null) r.cancelledAt = ctx.now;
  return json(responseObject(r, ctx.now));
}

function remove(ctx: Ctx): Reply {
  const id = ctx.params[0] ?? '';
  if (!ctx.sim.responses.delete(id)) return notFound(ctx, id);
  return json({ id, object: 'response', deleted: true });
}

export const openaiResponsesModule: ProtocolModule = {
  name: 'openai-responses',
  prefixes: ['/v1/responses'],
  upstream: true,
  error: openaiVideosModule.error,
  authenticate: (ctx) => openaiVideosModule.authenticate?.(ctx) ?? null,
  responseHeaders: (): HeaderMap => ({ 'x-request-id': `req_${hex(32)}` }),
  routes: [
    // A create with an Idempotency-Key answers a repeat with the first answer: one response, however often it is retried.
    { name: 'openai.responses.create', method: 'POST', path: /^\/v1\/responses$/, idempotent: true, handle: createResponse },
    { name: 'openai.responses.retrieve', method: 'GET', path: /^\/v1\/responses\/([^/]+)$/, handle: retrieve },
    { name: 'openai.responses.cancel', method: 'POST', path: /^\/v1\/responses\/([^/]+)\/cancel$/, handle: cancel },
    { name: 'openai.responses.delete', method: 'DELETE', path: /^\/v1\/responses\/([^/]+)$/, handle: remove },
  ],
};
