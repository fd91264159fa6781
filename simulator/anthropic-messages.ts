/**
 * Anthropic Messages API (`POST /v1/messages`, plus `/v1/messages/count_tokens`): the native
 * upstream of the `cm` channels. Answers are deterministic echoes of the last user message, so a
 * test can predict text, token counts and stream events exactly. Faults are chosen by markers in
 * the last user message (see faults.ts `parseTextMarkers` / `gateText`).
 */
import { createHash, randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Ctx, ErrorDetail, HeaderMap, ProtocolModule, Reply } from './server';
import { echoText, type TextMarkers, textFaults } from './faults';
import { sseReply } from './sse';
import { sniffImage } from './assets';

// ---------------------------------------------------------------------------------------------
// Request schema
// ---------------------------------------------------------------------------------------------

const cacheControl = z.unknown().optional();
const urlSource = z.object({ type: z.literal('url'), url: z.string().min(1) });
const imageSource = z.discriminatedUnion('type', [
  z.object({ type: z.literal('base64'), media_type: z.enum(['image/jpeg', 'image/png', 'image/gif', 'image/webp']), data: z.string().min(1) }),
  urlSource,
]);
const documentSource = z.discriminatedUnion('type', [
  z.object({ type: z.literal('base64'), media_type: z.literal('application/pdf'), data: z.string().min(1) }),
  z.object({ type: z.literal('text'), media_type: z.literal('text/plain'), data: z.string() }),
  urlSource,
]);
const textBlock = z.object({ type: z.literal('text'), text: z.string(), cache_control: cacheControl, citations: z.unknown().optional() });
const imageBlock = z.object({ type: z.literal('image'), source: imageSource, cache_control: cacheControl });
const documentBlock = z.object({
  type: z.literal('document'),
  source: documentSource,
  title: z.string().nullish(),
  context: z.string().nullish(),
  citations: z.unknown().optional(),
  cache_control: cacheControl,
});
const toolUseBlock = z.object({
  type: z.literal('tool_use'),
  id: z.string().min(1),
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
  cache_control: cacheControl,
});
const toolResultBlock = z.object({
  type: z.literal('tool_result'),
  tool_use_id: z.string().min(1),
  content: z.union([z.string(), z.array(z.discriminatedUnion('type', [textBlock, imageBlock, documentBlock]))]).optional(),
  is_error: z.boolean().optional(),
  cache_control: cacheControl,
});
const thinkingBlock = z.object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() });
const redactedThinkingBlock = z.object({ type: z.literal('redacted_thinking'), data: z.string() });
const contentBlock = z.discriminatedUnion('type', [textBlock, imageBlock, documentBlock, toolUseBlock, toolResultBlock, thinkingBlock, redactedThinkingBlock]);
type ContentBlock = z.infer<typeof contentBlock>;

const message = z.object({ role: z.enum(['user', 'assistant']), content: z.union([z.string(), z.array(contentBlock)]) });
const tool = z.object({
  type: z.literal('custom').optional(),
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,128}$/),
  description: z.string().optional(),
  input_schema: z
    .object({ type: z.literal('object'), properties: z.record(z.string(), z.unknown()).nullish(), required: z.array(z.string()).nullish() })
    .passthrough(),
  cache_control: cacheControl,
});
const toolChoice = z.discriminatedUnion('type', [
  z.object({ type: z.literal('auto'), disable_parallel_tool_use: z.boolean().optional() }),
  z.object({ type: z.literal('any'), disable_parallel_tool_use: z.boolean().optional() }),
  z.object({ type: z.literal('tool'), name: z.string().min(1), disable_parallel_tool_use: z.boolean().optional() }),
  z.object({ type: z.literal('none') }),
]);
const thinking = z.discriminatedUnion('type', [
  z.object({ type: z.literal('enabled'), budget_tokens: z.number().int().min(1024) }),
  z.object({ type: z.literal('disabled') }),
]);

const messagesSchema = z
  .strictObject({
    model: z.string().min(1),
    max_tokens: z.number().int().min(1),
    messages: z.array(message).min(1),
    system: z.union([z.string(), z.array(textBlock)]).optional(),
    temperature: z.number().min(0).max(1).optional(),
    top_p: z.number().min(0).max(1).optional(),
    top_k: z.number().int().min(0).optional(),
    stop_sequences: z.array(z.string().min(1)).optional(),
    stream: z.boolean().optional(),
    tools: z.array(tool).optional(),
    tool_choice: toolChoice.optional(),
    thinking: thinking.optional(),
    metadata: z.object({ user_id: z.string().nullish() }).optional(),
    service_tier: z.enum(['auto', 'standard_only']).optional(),
  })
  .superRefine((body, ctx) => {
    if (body.thinking?.type === 'enabled' && body.thinking.budget_tokens >= body.max_tokens) {
      ctx.addIssue({ code: 'custom', path: ['thinking', 'budget_tokens'], message: '`max_tokens` must be greater than `thinking.budget_tokens`' });
    }
  });
type MessagesRequest = z.infer<typeof messagesSchema>;

const countSchema = z.strictObject({
  model: z.string().min(1),
  messages: z.array(message).min(1),
  system: z.union([z.string(), z.array(textBlock)]).optional(),
  tools: z.array(tool).optional(),
  tool_choice: toolChoice.optional(),
  thinking: thinking.optional(),
});

// ---------------------------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------------------------

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  405: 'invalid_request_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

function errorType(status: number): string {
  return ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

function anthropicError(status: number, message: string, detail?: ErrorDetail): Reply {
  return { kind: 'json', status, body: { type: 'error', error: { type: errorType(status), message } }, headers: detail?.headers };
}

const OVERLOADED = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } };

function id24(): string {
  return randomUUID().replace(/-/g, '').slice(0, 24);
}

export const tokensFor = (chars: number): number => Math.ceil(chars / 4);

// ---------------------------------------------------------------------------------------------
// The deterministic answer
// ---------------------------------------------------------------------------------------------

type OutBlock =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

interface Answer {
  content: OutBlock[];
  stopReason: 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';
  stopSequence: string | null;
  inputTokens: number;
  outputTokens: number;
}

function blockText(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'tool_result':
      if (typeof block.content === 'string') return block.content;
      return (block.content ?? []).map((b) => (b.type === 'text' ? b.text : '')).join('');
    case 'tool_use':
      return JSON.stringify(block.input);
    case 'thinking':
      return block.thinking;
    case 'document':
      return block.source.type === 'text' ? block.source.data : '';
    default:
      return '';
  }
}

function contentText(content: string | ContentBlock[], types: readonly string[]): string {
  if (typeof content === 'string') return content;
  return content
    .filter((b) => types.includes(b.type))
    .map(blockText)
    .join('\n');
}

/** Text of the last user message: where the echo and the markers come from. */
export function lastUserText(messages: MessagesRequest['messages']): string {
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const m = messages[i];
    if (m && m.role === 'user') return contentText(m.content, ['text', 'tool_result']);
  }
  return '';
}

function inputChars(body: Pick<MessagesRequest, 'messages' | 'system' | 'tools'>): number {
  let n = typeof body.system === 'string' ? body.system.length : (body.system ?? []).reduce((s, b) => s + b.text.length, 0);
  for (const m of body.messages) n += contentText(m.content, ['text', 'tool_result', 'tool_use', 'thinking', 'document']).length;
  if (body.tools) n += JSON.stringify(body.tools).length;
  return n;
}

/** A small input object satisfying the tool's required properties (by their JSON-schema type). */
function toolInput(t: z.infer<typeof tool>): Record<string, unknown> {
  const props = t.input_schema.properties ?? {};
  const input: Record<string, unknown> = {};
  for (const name of t.input_schema.required ?? []) {
    const p = props[name];
    const type = typeof p === 'object' && p !== null && 'type' in p ? (p as { type: unknown }).type : 'string';
    input[name] = type === 'number' || type === 'integer' ? 1 : type === 'boolean' ? true : type === 'array' ? [] : type === 'object' ? {} : 'sim';
  }
  return input;
}

function answer(body: MessagesRequest, prompt: string, t: TextMarkers): Answer {
  const content: OutBlock[] = [];
  let outChars = 0;
  if (body.thinking?.type === 'enabled') {
    const text = `Simulated reasoning about: ${prompt.slice(0, 80)}`;
    const signature = createHash('sha256').update(text).digest('base64');
    content.push({ type: 'thinking', thinking: text, signature });
    outChars += text.length;
  }
  const inputTokens = Math.max(1, tokensFor(inputChars(body)));
  const tools = body.tools ?? [];
  const choice = body.tool_choice;
  const forced = choice?.type === 'any' || choice?.type === 'tool';
  if (tools.length > 0 && choice?.type !== 'none' && (t.tool || forced)) {
    const chosen = (choice?.type === 'tool' ? tools.find((x) => x.name === choice.name) : undefined) ?? tools[0];
    if (chosen) {
      const input = toolInput(chosen);
      content.push({ type: 'tool_use', id: `toolu_${id24()}`, name: chosen.name, input });
      outChars += chosen.name.length + JSON.stringify(input).length;
      return { content, stopReason: 'tool_use', stopSequence: null, inputTokens, outputTokens: Math.max(1, tokensFor(outChars)) };
    }
  }
  let text = echoText(prompt, t);
  let stopReason: Answer['stopReason'] = 'end_turn';
  let stopSequence: string | null = null;
  let cut = -1;
  for (const seq of body.stop_sequences ?? []) {
    const at = text.indexOf(seq);
    if (at >= 0 && (cut < 0 || at < cut)) {
      cut = at;
      stopSequence = seq;
    }
  }
  if (stopSequence !== null) {
    text = text.slice(0, cut);
    stopReason = 'stop_sequence';
  }
  const room = Math.max(0, body.max_tokens * 4 - outChars);
  if (text.length > room) {
    text = text.slice(0, room);
    stopReason = 'max_tokens';
    stopSequence = null;
  }
  content.push({ type: 'text', text });
  outChars += text.length;
  return { content, stopReason, stopSequence, inputTokens, outputTokens: Math.max(1, tokensFor(outChars)) };
}

/**
 * Splits `s` into several pieces (at least 3 when it has 3+ chars, at most 8 chars each, as
 * providers stream), or 4 KiB ones past 64 KiB (a `[sim:long]` answer stays a few thousand events).
 */
export function pieces(s: string): string[] {
  if (s.length === 0) return [''];
  const size = s.length > 64 * 1024 ? 4096 : Math.max(1, Math.min(8, Math.ceil(s.length / 3)));
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

/** The stream's events from message_start to message_stop, in the real API's order. */
function streamEvents(msgId: string, model: string, a: Answer): SseEvent[] {
  const ev = (event: string, data: Record<string, unknown>): SseEvent => ({ event, data: { type: event, ...data } });
  const events: SseEvent[] = [
    ev('message_start', {
      message: {
        id: msgId,
        type: 'message',
        role: 'assistant',
        content: [],
        model,
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: a.inputTokens, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      },
    }),
    ev('ping', {}),
  ];
  a.content.forEach((block, index) => {
    const delta = (d: Record<string, unknown>): SseEvent => ev('content_block_delta', { index, delta: d });
    if (block.type === 'text') {
      events.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }));
      for (const p of pieces(block.text)) events.push(delta({ type: 'text_delta', text: p }));
    } else if (block.type === 'thinking') {
      events.push(ev('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } }));
      for (const p of pieces(block.thinking)) events.push(delta({ type: 'thinking_delta', thinking: p }));
      events.push(delta({ type: 'signature_delta', signature: block.signature }));
    } else {
      events.push(ev('content_block_start', { index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } }));
      for (const p of pieces(JSON.stringify(block.input))) events.push(delta({ type: 'input_json_delta', partial_json: p }));
    }
    events.push(ev('content_block_stop', { index }));
  });
  events.push(ev('message_delta', { delta: { stop_reason: a.stopReason, stop_sequence: a.stopSequence }, usage: { output_tokens: a.outputTokens } }));
  events.push(ev('message_stop', {}));
  return events;
}

const sse = (e: { event: string; data: unknown }): string => `event: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`;

function streamReply(events: SseEvent[], t: TextMarkers, slowMs: number): Reply {
  // midstream-error: message_start, ping, the first block's start and about half its deltas.
  const firstStop = events.findIndex((e) => e.event === 'content_block_stop');
  const failAt = t.midstreamError ? Math.max(3, Math.ceil((firstStop < 0 ? events.length : firstStop) / 2) + 1) : -1;
  return sseReply({ frames: events.map(sse), failAt, errorFrame: sse({ event: 'error', data: OVERLOADED }) }, t, slowMs);
}

// ---------------------------------------------------------------------------------------------
// Handlers
// ---------------------------------------------------------------------------------------------

async function readJson(ctx: Ctx): Promise<{ ok: true; value: unknown } | { ok: false; reply: Reply }> {
  const body = await ctx.body();
  if (body.kind !== 'json' || typeof body.value !== 'object' || body.value === null || Array.isArray(body.value)) {
    return { ok: false, reply: ctx.error(400, 'The request body must be a JSON object (content-type: application/json).') };
  }
  return { ok: true, value: body.value };
}

/** Anthropic's wording: `<path>: <message>`. */
function zodError(ctx: Ctx, error: z.ZodError): Reply {
  const issue = error.issues[0];
  if (!issue) return ctx.error(400, 'Invalid request.');
  if (issue.code === 'unrecognized_keys') return ctx.error(400, `${issue.keys[0] ?? ''}: Extra inputs are not permitted`);
  const path = issue.path.map(String).join('.');
  return ctx.error(400, `${path}: ${issue.message}`);
}

const MODEL_RE = /^(claude-|cm-)/;

/** Decoded media must be what the request says (as the real API checks). */
function checkMedia(ctx: Ctx, body: MessagesRequest): Reply | null {
  for (const [i, m] of body.messages.entries()) {
    if (typeof m.content === 'string') continue;
    const blocks: ContentBlock[] = [];
    for (const b of m.content) {
      blocks.push(b);
      if (b.type === 'tool_result' && Array.isArray(b.content)) blocks.push(...b.content);
    }
    for (const b of blocks) {
      if (b.type === 'image' && b.source.type === 'base64') {
        const sniffed = sniffImage(Buffer.from(b.source.data, 'base64'));
        if (sniffed === null) return ctx.error(400, `messages.${i}.content: Could not process image`);
        if (sniffed !== b.source.media_type) {
          return ctx.error(400, `messages.${i}.content: Image does not match the provided media type ${b.source.media_type}`);
        }
      }
      if (b.type === 'document' && b.source.type === 'base64') {
        if (Buffer.from(b.source.data, 'base64').subarray(0, 5).toString('latin1') !== '%PDF-') {
          return ctx.error(400, `messages.${i}.content: The PDF specified was not valid.`);
        }
      }
    }
  }
  return null;
}

async function createMessage(ctx: Ctx): Promise<Reply> {
  const read = await readJson(ctx);
  if (!read.ok) return read.reply;
  const parsed = messagesSchema.safeParse(read.value);
  if (!parsed.success) return zodError(ctx, parsed.error);
  const body = parsed.data;
  if (!MODEL_RE.test(body.model)) return ctx.error(404, `model: ${body.model}`);
  const media = checkMedia(ctx, body);
  if (media) return media;

  const prompt = lastUserText(body.messages);
  const { markers, t, fault } = textFaults(ctx, prompt);
  if (fault) return fault;

  const a = answer(body, prompt, t);
  ctx.sim.stats.textRequest(a.inputTokens, a.outputTokens);
  const msgId = `msg_${id24()}`;
  if (body.stream === true) {
    if (t.midstreamError) ctx.sim.stats.fault('midstream-error');
    if (t.hang) ctx.sim.stats.fault('hang');
    return streamReply(streamEvents(msgId, body.model, a), t, markers.slowMs);
  }
  return {
    kind: 'json',
    status: 200,
    delayMs: markers.slowMs,
    body: {
      id: msgId,
      type: 'message',
      role: 'assistant',
      content: a.content,
      model: body.model,
      stop_reason: a.stopReason,
      stop_sequence: a.stopSequence,
      usage: { input_tokens: a.inputTokens, output_tokens: a.outputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    },
  };
}

async function countTokens(ctx: Ctx): Promise<Reply> {
  const read = await readJson(ctx);
  if (!read.ok) return read.reply;
  const parsed = countSchema.safeParse(read.value);
  if (!parsed.success) return zodError(ctx, parsed.error);
  if (!MODEL_RE.test(parsed.data.model)) return ctx.error(404, `model: ${parsed.data.model}`);
  return { kind: 'json', status: 200, body: { input_tokens: Math.max(1, tokensFor(inputChars(parsed.data))) } };
}

function authenticate(ctx: Ctx): Reply | null {
  const bearer = /^Bearer\s+(\S.*)$/i.exec(ctx.header('authorization') ?? '')?.[1]?.trim();
  const key = ctx.header('x-api-key')?.trim() || bearer;
  if (!key) return ctx.error(401, 'x-api-key header is required');
  const expected = ctx.sim.options.apiKey;
  if (expected !== undefined && key !== expected) return ctx.error(401, 'invalid x-api-key');
  return null;
}

export const anthropicMessagesModule: ProtocolModule = {
  name: 'anthropic',
  prefixes: ['/v1/messages'],
  upstream: true,
  error: anthropicError,
  authenticate,
  responseHeaders: (): HeaderMap => ({ 'request-id': `req_${id24()}` }),
  routes: [
    { name: 'anthropic.messages', method: 'POST', path: /^\/v1\/messages$/, handle: createMessage },
    { name: 'anthropic.count_tokens', method: 'POST', path: /^\/v1\/messages\/count_tokens$/, handle: countTokens },
  ],
};
