/**
 * The text protocols' pure mapping: the native messages body (compatibility extensions mapped
 * or dropped), usage from bodies and stream events for both protocols, the chat body sent
 * upstream (usage chunk requested), and the SSE splitter both stream taps are fed from.
 */
import {
  anthropicErrorType,
  type CompatExtensions,
  isNativeErrorBody,
  MessagesStreamTap,
  toNativeBody,
  usageOfMessage,
} from '../../src/providers/anthropic/mapping';
import { ChatStreamTap, toUpstreamChatBody, usageOfCompletion } from '../../src/providers/openai-compatible/mapping';
import { MAX_SSE_EVENT_CHARS, type SseEvent, SseSplitter } from '../../src/providers/sse-events';

type Body = Record<string, unknown> & CompatExtensions;

const JSON_INSTRUCTION = 'Respond with a single valid JSON object and nothing else: no prose, no code fences.';

const base = (extra: Record<string, unknown> = {}): Body => ({
  model: 'cm-haiku-4.5',
  max_tokens: 256,
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});

describe('toNativeBody', () => {
  test('null when there is no compatibility field and the model keeps its name', () => {
    expect(toNativeBody(base({ system: 'be brief', stop_sequences: ['END'], metadata: { user_id: 'u' }, temperature: 0.3 }), 'cm-haiku-4.5')).toBeNull();
  });

  test('a mapped model: the same body with the upstream name, the client object untouched', () => {
    const body = base({ system: 'be brief', top_k: 5 });
    const copy = structuredClone(body);
    expect(toNativeBody(body, 'claude-haiku-4-5')).toEqual({ ...copy, model: 'claude-haiku-4-5' });
    expect(body).toEqual(copy);
  });

  test.each<[string, Record<string, unknown>, string[] | undefined]>([
    ['a stop string joins stop_sequences', { stop_sequences: ['END'], stop: 'STOP' }, ['END', 'STOP']],
    ['a stop array joins stop_sequences', { stop_sequences: ['END'], stop: ['A', 'B'] }, ['END', 'A', 'B']],
    ['a stop string becomes stop_sequences', { stop: 'STOP' }, ['STOP']],
    ['duplicates across both are dropped', { stop_sequences: ['END', 'A'], stop: ['A', 'END', 'B', 'B'] }, ['END', 'A', 'B']],
    ['a stop string already in stop_sequences adds nothing', { stop_sequences: ['END'], stop: 'END' }, ['END']],
    ['a null stop is dropped and adds nothing', { stop: null }, undefined],
  ])('%s', (_what, extra, expected) => {
    const out = toNativeBody(base(extra), 'cm-haiku-4.5');
    expect(out).not.toBeNull();
    expect(out).not.toHaveProperty('stop');
    expect(out?.stop_sequences).toEqual(expected);
  });

  test('user becomes metadata.user_id, other metadata kept', () => {
    const out = toNativeBody(base({ user: 'end-user-7', metadata: { tag: 'x' } }), 'cm-haiku-4.5');
    expect(out?.metadata).toEqual({ tag: 'x', user_id: 'end-user-7' });
    expect(out).not.toHaveProperty('user');
  });

  test('user with no metadata creates it', () => {
    expect(toNativeBody(base({ user: 'u1' }), 'cm-haiku-4.5')?.metadata).toEqual({ user_id: 'u1' });
  });

  test('a client-set metadata.user_id wins over user', () => {
    const out = toNativeBody(base({ user: 'compat', metadata: { user_id: 'native' } }), 'cm-haiku-4.5');
    expect(out?.metadata).toEqual({ user_id: 'native' });
    expect(out).not.toHaveProperty('user');
  });

  const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };
  const schemaInstruction = `${JSON_INSTRUCTION} It must conform to this JSON Schema: ${JSON.stringify(schema)}`;

  test.each<[string, Record<string, unknown>, unknown]>([
    [
      'json_object appended to a string system',
      { system: 'You are terse.', response_format: { type: 'json_object' } },
      `You are terse.\n\n${JSON_INSTRUCTION}`,
    ],
    [
      'json_object appended to an array system as one more text block',
      { system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }], response_format: { type: 'json_object' } },
      [
        { type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: JSON_INSTRUCTION },
      ],
    ],
    ['json_object becomes the system when there is none', { response_format: { type: 'json_object' } }, JSON_INSTRUCTION],
    ['json_object replaces an empty system string', { system: '', response_format: { type: 'json_object' } }, JSON_INSTRUCTION],
    [
      'json_schema carries the schema, appended to a string system',
      { system: 'S', response_format: { type: 'json_schema', json_schema: { name: 'a', schema } } },
      `S\n\n${schemaInstruction}`,
    ],
    ['json_schema as the system when there is none', { response_format: { type: 'json_schema', json_schema: { name: 'a', schema } } }, schemaInstruction],
    ['json_schema without a schema: the plain JSON instruction', { response_format: { type: 'json_schema', json_schema: { name: 'a' } } }, JSON_INSTRUCTION],
    ['text leaves the system alone', { system: 'S', response_format: { type: 'text' } }, 'S'],
    ['text adds no system', { response_format: { type: 'text' } }, undefined],
  ])('response_format: %s', (_what, extra, system) => {
    const out = toNativeBody(base(extra), 'cm-haiku-4.5');
    expect(out).not.toBeNull();
    expect(out).not.toHaveProperty('response_format');
    expect(out?.system).toEqual(system);
  });

  test('the client system array is not mutated when the instruction is appended', () => {
    const system = [{ type: 'text', text: 'S' }];
    toNativeBody(base({ system, response_format: { type: 'json_object' } }), 'cm-haiku-4.5');
    expect(system).toEqual([{ type: 'text', text: 'S' }]);
  });

  test.each<[string, Record<string, unknown>]>([
    ['n', { n: 1 }],
    ['presence_penalty', { presence_penalty: 0.5 }],
    ['frequency_penalty', { frequency_penalty: -1 }],
    ['logit_bias', { logit_bias: { '50256': -100 } }],
    ['seed', { seed: 42 }],
  ])('%s has no native counterpart: dropped, nothing else changes', (_what, extra) => {
    const body = base({ system: 'S', temperature: 0.2 });
    expect(toNativeBody({ ...body, ...extra }, 'cm-haiku-4.5')).toEqual(body);
  });

  test('every extension at once, with a mapped model', () => {
    const out = toNativeBody(
      base({
        n: 1,
        stop: ['X'],
        presence_penalty: 1,
        frequency_penalty: 1,
        logit_bias: { '1': 1 },
        user: 'u',
        response_format: { type: 'json_object' },
        seed: 3,
        top_k: 9,
      }),
      'claude-haiku-4-5',
    );
    expect(out).toEqual({
      model: 'claude-haiku-4-5',
      max_tokens: 256,
      messages: [{ role: 'user', content: 'hi' }],
      top_k: 9,
      stop_sequences: ['X'],
      metadata: { user_id: 'u' },
      system: JSON_INSTRUCTION,
    });
  });
});

describe('usageOfMessage', () => {
  test('every count of a Message', () => {
    expect(
      usageOfMessage({
        type: 'message',
        id: 'msg_1',
        usage: { input_tokens: 120, output_tokens: 45, cache_creation_input_tokens: 30, cache_read_input_tokens: 900 },
      }),
    ).toEqual({ inputTokens: 120, outputTokens: 45, cacheCreationTokens: 30, cacheReadTokens: 900 });
  });

  test('absent or null cache counts are 0', () => {
    expect(usageOfMessage({ type: 'message', usage: { input_tokens: 7, output_tokens: 3 } })).toEqual({
      inputTokens: 7,
      outputTokens: 3,
      cacheCreationTokens: 0,
      cacheReadTokens: 0,
    });
    expect(
      usageOfMessage({ type: 'message', usage: { input_tokens: 7, output_tokens: 3, cache_creation_input_tokens: null, cache_read_input_tokens: null } }),
    ).toEqual({
      inputTokens: 7,
      outputTokens: 3,
      cacheCreationTokens: 0,
      cacheReadTokens: 0,
    });
  });

  test.each<[string, unknown]>([
    ['an error body', { type: 'error', error: { type: 'api_error', message: 'x' } }],
    ['a message without usage', { type: 'message' }],
    ['negative counts', { type: 'message', usage: { input_tokens: -1, output_tokens: 0 } }],
    ['null', null],
    ['a string', 'message'],
  ])('null for %s', (_what, body) => {
    expect(usageOfMessage(body)).toBeNull();
  });
});

describe('MessagesStreamTap', () => {
  const start = (usage: Record<string, number>) =>
    JSON.stringify({ type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], usage } });
  const delta = (usage: Record<string, number>) => JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage });

  test('usage from message_start, then message_delta overrides output_tokens', () => {
    const tap = new MessagesStreamTap();
    expect(tap.onEvent('message_start', start({ input_tokens: 25, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 400 }))).toBe(
      true,
    );
    expect(tap.usage).toEqual({ inputTokens: 25, outputTokens: 1, cacheCreationTokens: 0, cacheReadTokens: 400 });
    expect(tap.onEvent('content_block_delta', JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } }))).toBe(true);
    expect(tap.onEvent('message_delta', delta({ output_tokens: 42 }))).toBe(true);
    expect(tap.usage).toEqual({ inputTokens: 25, outputTokens: 42, cacheCreationTokens: 0, cacheReadTokens: 400 });
    expect(tap.ended).toBe(false);
  });

  test("message_delta's input and cache fields override message_start's too", () => {
    const tap = new MessagesStreamTap();
    tap.onEvent('message_start', start({ input_tokens: 25, output_tokens: 1, cache_creation_input_tokens: 5, cache_read_input_tokens: 400 }));
    tap.onEvent('message_delta', delta({ input_tokens: 30, output_tokens: 60, cache_creation_input_tokens: 7, cache_read_input_tokens: 410 }));
    expect(tap.usage).toEqual({ inputTokens: 30, outputTokens: 60, cacheCreationTokens: 7, cacheReadTokens: 410 });
  });

  test('message_stop is the proper end; not an error', () => {
    const tap = new MessagesStreamTap();
    tap.onEvent('message_start', start({ input_tokens: 1, output_tokens: 1 }));
    expect(tap.ended).toBe(false);
    expect(tap.onEvent('message_stop', '{"type":"message_stop"}')).toBe(true);
    expect(tap.ended).toBe(true);
    expect(tap.errored).toBe(false);
  });

  test('an error event ends the stream as errored', () => {
    const tap = new MessagesStreamTap();
    expect(tap.onEvent('error', JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }))).toBe(true);
    expect(tap.ended).toBe(true);
    expect(tap.errored).toBe(true);
  });

  test.each<[string, string, string]>([
    ['message_start with broken JSON', 'message_start', '{"type":"message_start","message":{"usage":{"input_tokens":'],
    ['message_delta with broken JSON', 'message_delta', 'not json'],
    ['message_delta with a wrongly typed count', 'message_delta', '{"usage":{"output_tokens":"many"}}'],
    ['message_start without a message', 'message_start', '{"type":"message_start"}'],
  ])('%s is tolerated: forwarded, usage kept', (_what, name, data) => {
    const tap = new MessagesStreamTap();
    tap.onEvent('message_start', start({ input_tokens: 10, output_tokens: 2 }));
    expect(tap.onEvent(name, data)).toBe(true);
    expect(tap.usage).toEqual({ inputTokens: 10, outputTokens: 2, cacheCreationTokens: 0, cacheReadTokens: 0 });
    expect(tap.ended).toBe(false);
    expect(tap.errored).toBe(false);
  });

  test('ping and content events change nothing', () => {
    const tap = new MessagesStreamTap();
    for (const name of ['ping', 'content_block_start', 'content_block_stop', null]) expect(tap.onEvent(name, '{}')).toBe(true);
    expect(tap.usage).toEqual({ inputTokens: 0, outputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0 });
    expect(tap.ended).toBe(false);
  });

  test('breakOff is a native api_error event', () => {
    expect(new MessagesStreamTap().breakOff('upstream went quiet')).toBe(
      'event: error\ndata: {"type":"error","error":{"type":"api_error","message":"upstream went quiet"}}\n\n',
    );
  });
});

describe('anthropicErrorType', () => {
  test.each([
    [400, 'invalid_request_error'],
    [401, 'authentication_error'],
    [402, 'billing_error'],
    [403, 'permission_error'],
    [404, 'not_found_error'],
    [413, 'request_too_large'],
    [429, 'rate_limit_error'],
    [500, 'api_error'],
    [502, 'api_error'],
    [503, 'api_error'],
    [529, 'overloaded_error'],
    [422, 'invalid_request_error'],
  ])('%d -> %s', (status, type) => {
    expect(anthropicErrorType(status)).toBe(type);
  });

  test('isNativeErrorBody recognises only the native error shape', () => {
    expect(isNativeErrorBody({ type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } })).toBe(true);
    expect(isNativeErrorBody({ error: { message: 'x', type: 'server_error', param: null, code: null } })).toBe(false);
    expect(isNativeErrorBody('error')).toBe(false);
  });
});

describe('usageOfCompletion', () => {
  test('cached tokens are subtracted from the input and counted as cache reads', () => {
    expect(
      usageOfCompletion({ id: 'c', usage: { prompt_tokens: 1000, completion_tokens: 50, total_tokens: 1050, prompt_tokens_details: { cached_tokens: 768 } } }),
    ).toEqual({
      inputTokens: 232,
      outputTokens: 50,
      cacheCreationTokens: 0,
      cacheReadTokens: 768,
    });
  });

  test('no details: every prompt token is input', () => {
    expect(usageOfCompletion({ usage: { prompt_tokens: 12, completion_tokens: 3 } })).toEqual({
      inputTokens: 12,
      outputTokens: 3,
      cacheCreationTokens: 0,
      cacheReadTokens: 0,
    });
    expect(usageOfCompletion({ usage: { prompt_tokens: 12, completion_tokens: 3, prompt_tokens_details: null } })).toEqual({
      inputTokens: 12,
      outputTokens: 3,
      cacheCreationTokens: 0,
      cacheReadTokens: 0,
    });
  });

  test('more cached than prompt tokens never gives a negative input', () => {
    expect(usageOfCompletion({ usage: { prompt_tokens: 10, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 20 } } })?.inputTokens).toBe(0);
  });

  test.each<[string, unknown]>([
    ['no usage', { id: 'c', choices: [] }],
    ['null usage', { usage: null }],
    ['a string', 'usage'],
  ])('null for %s', (_what, body) => {
    expect(usageOfCompletion(body)).toBeNull();
  });
});

describe('toUpstreamChatBody', () => {
  const msgs = [{ role: 'user', content: 'hi' }];

  test.each<[string, Record<string, unknown>, string, Record<string, unknown> | null]>([
    ['not streamed, same model: unchanged', { model: 'gpt-4o', messages: msgs }, 'gpt-4o', null],
    ['stream false, same model: unchanged', { model: 'gpt-4o', messages: msgs, stream: false }, 'gpt-4o', null],
    ['not streamed, mapped model', { model: 'gpt-4o', messages: msgs }, 'gpt-4o-2024-11-20', { model: 'gpt-4o-2024-11-20', messages: msgs }],
    [
      'streamed without stream_options: usage requested',
      { model: 'gpt-4o', messages: msgs, stream: true },
      'gpt-4o',
      { model: 'gpt-4o', messages: msgs, stream: true, stream_options: { include_usage: true } },
    ],
    [
      'streamed with include_usage false: usage requested',
      { model: 'gpt-4o', messages: msgs, stream: true, stream_options: { include_usage: false } },
      'gpt-4o',
      { model: 'gpt-4o', messages: msgs, stream: true, stream_options: { include_usage: true } },
    ],
    [
      'streamed with other stream_options: kept, usage added',
      { model: 'gpt-4o', messages: msgs, stream: true, stream_options: { include_obfuscation: false } },
      'gpt-4o',
      { model: 'gpt-4o', messages: msgs, stream: true, stream_options: { include_obfuscation: false, include_usage: true } },
    ],
    [
      'streamed, client asked for usage, same model: unchanged',
      { model: 'gpt-4o', messages: msgs, stream: true, stream_options: { include_usage: true } },
      'gpt-4o',
      null,
    ],
    [
      'streamed, client asked for usage, mapped model: only the model changes',
      { model: 'gpt-4o', messages: msgs, stream: true, stream_options: { include_usage: true } },
      'gpt-4o-2024-11-20',
      { model: 'gpt-4o-2024-11-20', messages: msgs, stream: true, stream_options: { include_usage: true } },
    ],
  ])('%s', (_what, body, upstreamModel, expected) => {
    expect(toUpstreamChatBody(body, upstreamModel)).toEqual(expected);
  });
});

describe('ChatStreamTap', () => {
  const content = JSON.stringify({
    id: 'c1',
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: null }],
    usage: null,
  });
  const usageChunk = JSON.stringify({
    id: 'c1',
    object: 'chat.completion.chunk',
    choices: [],
    usage: { prompt_tokens: 40, completion_tokens: 9, total_tokens: 49, prompt_tokens_details: { cached_tokens: 8 } },
  });
  const expectedUsage = { inputTokens: 32, outputTokens: 9, cacheCreationTokens: 0, cacheReadTokens: 8 };

  test('client did not ask for usage: the usage chunk is read and dropped, the rest forwarded', () => {
    const tap = new ChatStreamTap(false);
    expect(tap.onEvent(null, content)).toBe(true);
    expect(tap.usage).toEqual({ inputTokens: 0, outputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0 });
    expect(tap.onEvent(null, usageChunk)).toBe(false);
    expect(tap.usage).toEqual(expectedUsage);
    expect(tap.ended).toBe(false);
    expect(tap.onEvent(null, '[DONE]')).toBe(true);
    expect(tap.ended).toBe(true);
    expect(tap.errored).toBe(false);
  });

  test('client asked for usage: the usage chunk is read and forwarded', () => {
    const tap = new ChatStreamTap(true);
    expect(tap.onEvent(null, usageChunk)).toBe(true);
    expect(tap.usage).toEqual(expectedUsage);
  });

  test('usage on a chunk that still has choices is read and always forwarded', () => {
    const tap = new ChatStreamTap(false);
    const chunk = JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 2 } });
    expect(tap.onEvent(null, chunk)).toBe(true);
    expect(tap.usage).toEqual({ inputTokens: 5, outputTokens: 2, cacheCreationTokens: 0, cacheReadTokens: 0 });
  });

  test('a pretty-printed usage chunk is recognised too', () => {
    const tap = new ChatStreamTap(false);
    expect(tap.onEvent(null, '{"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}}')).toBe(false);
    expect(tap.usage.outputTokens).toBe(4);
  });

  test('a usage-looking chunk that is not JSON is forwarded unchanged', () => {
    const tap = new ChatStreamTap(false);
    expect(tap.onEvent(null, '{"choices":[],"usage":{"prompt_tokens":')).toBe(true);
    expect(tap.usage.inputTokens).toBe(0);
  });

  test('an {"error":...} line ends the stream as errored', () => {
    const tap = new ChatStreamTap(false);
    expect(tap.onEvent(null, JSON.stringify({ error: { message: 'overloaded', type: 'server_error' } }))).toBe(true);
    expect(tap.ended).toBe(true);
    expect(tap.errored).toBe(true);
  });

  test('content that mentions an error is not an error', () => {
    const tap = new ChatStreamTap(false);
    tap.onEvent(null, JSON.stringify({ choices: [{ index: 0, delta: { content: '{"error": 1}' } }] }));
    expect(tap.ended).toBe(false);
    expect(tap.errored).toBe(false);
  });

  test('breakOff is an OpenAI-shaped error line', () => {
    expect(new ChatStreamTap(false).breakOff('stream broke')).toBe(
      'data: {"error":{"message":"stream broke","type":"server_error","param":null,"code":"upstream_stream_broken"}}\n\n',
    );
  });
});

describe('SseSplitter', () => {
  function split(chunks: (string | Buffer)[]): SseEvent[] {
    const splitter = new SseSplitter();
    const events: SseEvent[] = [];
    for (const chunk of chunks) splitter.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk, (e) => events.push(e));
    return events;
  }

  const stream = 'event: message_start\ndata: {"a":1}\n\nevent: ping\ndata: {}\n\ndata: [DONE]\n\n';
  const expected: SseEvent[] = [
    { name: 'message_start', data: '{"a":1}', raw: 'event: message_start\ndata: {"a":1}' },
    { name: 'ping', data: '{}', raw: 'event: ping\ndata: {}' },
    { name: null, data: '[DONE]', raw: 'data: [DONE]' },
  ];

  test('several events in one chunk', () => {
    expect(split([stream])).toEqual(expected);
  });

  test('the same events however the bytes are cut in two', () => {
    const bytes = Buffer.from(stream);
    for (let cut = 1; cut < bytes.length; cut++) {
      expect(split([bytes.subarray(0, cut), bytes.subarray(cut)])).toEqual(expected);
    }
  });

  test('one byte at a time', () => {
    const bytes = Buffer.from(stream);
    expect(split([...bytes].map((b) => Buffer.from([b])))).toEqual(expected);
  });

  test('an incomplete event waits for its blank line', () => {
    const splitter = new SseSplitter();
    const events: SseEvent[] = [];
    splitter.push(Buffer.from('data: {"x":1}\n'), (e) => events.push(e));
    expect(events).toEqual([]);
    splitter.push(Buffer.from('\n'), (e) => events.push(e));
    expect(events).toEqual([{ name: null, data: '{"x":1}', raw: 'data: {"x":1}' }]);
  });

  test('a long event in many small chunks, terminators split anywhere, comes out whole and in order', () => {
    const long = `data: ${'x'.repeat(300_000)}`;
    const bytes = Buffer.from(`${long}\r\n\r\n${long}\n\ndata: end\n\n`);
    for (const size of [1000, 4093]) {
      const chunks = [];
      for (let at = 0; at < bytes.length; at += size) chunks.push(bytes.subarray(at, at + size));
      expect(split(chunks).map((e) => e.raw)).toEqual([long, long, 'data: end']);
    }
  });

  test('push answers false once an unfinished event is longer than MAX_SSE_EVENT_CHARS, true until then', () => {
    const splitter = new SseSplitter();
    const mib = Buffer.from('x'.repeat(1024 * 1024));
    const answers = [splitter.push(Buffer.from('data: '), () => undefined)];
    for (let i = 1; i < MAX_SSE_EVENT_CHARS / mib.length; i++) answers.push(splitter.push(mib, () => undefined));
    expect(answers.every(Boolean)).toBe(true);
    expect(splitter.push(mib, () => undefined)).toBe(false);
  });

  test('CRLF line endings', () => {
    expect(split(['event: a\r\ndata: 1\r\n\r\nevent: b\r\n', 'data: 2\r\n\r\n'])).toEqual([
      { name: 'a', data: '1', raw: 'event: a\r\ndata: 1' },
      { name: 'b', data: '2', raw: 'event: b\r\ndata: 2' },
    ]);
  });

  test('CRLF terminator split between chunks', () => {
    expect(split(['data: 1\r\n\r', '\ndata: 2\r', '\n\r\n']).map((e) => e.data)).toEqual(['1', '2']);
  });

  test('multi-line data joined with newlines; no space after the colon is fine', () => {
    expect(split(['data: line one\ndata:line two\ndata: \n\n'])).toEqual([
      { name: null, data: 'line one\nline two\n', raw: 'data: line one\ndata:line two\ndata: ' },
    ]);
  });

  test.each<[string, string]>([
    ['a 2-byte character', 'é'],
    ['a 3-byte character', '€'],
    ['a 4-byte character', '🦊'],
  ])('%s split across two chunks', (_what, char) => {
    const bytes = Buffer.from(`data: {"text":"a${char}b"}\n\n`);
    const at = bytes.indexOf(Buffer.from(char)) + 1;
    expect(split([bytes.subarray(0, at), bytes.subarray(at)])).toEqual([{ name: null, data: `{"text":"a${char}b"}`, raw: `data: {"text":"a${char}b"}` }]);
  });

  test('comments are ignored: a comment-only event yields nothing, a comment line adds no data', () => {
    expect(split([': keep-alive\n\n', ':\n\n', 'event: ping\n: note\ndata: {}\n\n'])).toEqual([
      { name: 'ping', data: '{}', raw: 'event: ping\n: note\ndata: {}' },
    ]);
  });

  test('an event with a name and no data has empty data', () => {
    expect(split(['event: ping\n\n'])).toEqual([{ name: 'ping', data: '', raw: 'event: ping' }]);
  });
});
