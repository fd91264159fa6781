/**
 * POST /v1/messages (spec 4.11) through the official Anthropic SDK against the demo channels
 * (the simulator's Messages API): answers, streams with the exact event order, tools,
 * extended thinking, images and PDFs, both auth headers, the compatibility extensions,
 * every validation rule as an Anthropic-shaped 400, upstream faults, and usage per key.
 */
import Anthropic, { APIError, AuthenticationError, BadRequestError, NotFoundError, RateLimitError } from '@anthropic-ai/sdk';
import { startGateway, type Gateway } from '../support/stack';
import { keyIdByName, nonce, readSse, simPieces, simTokens, TINY_PDF_BASE64, TINY_PNG_BASE64, usageOf, usageRowFor, type SseFrame } from '../support/text';

let gw: Gateway;
let key: string;
let anthropic: Anthropic;

const HAIKU = 'cm-haiku-4.5';
const SONNET = 'cm-sonnet-4.5';
const user = (content: string) => [{ role: 'user' as const, content }];

beforeAll(async () => {
  gw = await startGateway({ noWorker: true });
  key = await gw.issueKey('messages');
  anthropic = new Anthropic({ apiKey: key, baseURL: gw.url, maxRetries: 0 });
}, 120_000);

afterAll(async () => {
  await gw?.stop();
}, 120_000);

interface AnthropicErrorBody {
  type: string;
  error: { type: string; message: string };
}

/** Raw POST /v1/messages (status codes and exact bodies are what some tests check). */
async function postMessages(
  body: unknown,
  headers: Record<string, string> = { 'x-api-key': key },
): Promise<{ status: number; json: AnthropicErrorBody & Record<string, unknown>; headers: Headers }> {
  const res = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as AnthropicErrorBody & Record<string, unknown>, headers: res.headers };
}

/** Records the request headers the SDK sends, so a test knows which auth header it exercised. */
function recordingFetch(seen: Headers[]): typeof fetch {
  return async (input, init) => {
    seen.push(new Headers(init?.headers));
    return fetch(input, init);
  };
}

describe('answers', () => {
  test('messages.create: the echo, end_turn and the simulator token counts', async () => {
    const prompt = 'Hello gateway, how are you?';
    const system = 'Be brief.';
    const msg = await anthropic.messages.create({ model: HAIKU, max_tokens: 64, system, messages: user(prompt) });
    expect(msg.type).toBe('message');
    expect(msg.role).toBe('assistant');
    expect(msg.model).toBe(HAIKU);
    expect(msg.id).toMatch(/^msg_/);
    expect(msg.content).toEqual([{ type: 'text', text: `Echo: ${prompt}` }]);
    expect(msg.stop_reason).toBe('end_turn');
    expect(msg.stop_sequence).toBeNull();
    expect(msg.usage).toMatchObject({
      input_tokens: simTokens(system.length + prompt.length),
      output_tokens: simTokens(`Echo: ${prompt}`.length),
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    });
  });

  test('max_tokens truncates the answer with stop_reason max_tokens', async () => {
    const msg = await anthropic.messages.create({ model: HAIKU, max_tokens: 2, messages: user('a rather long sentence to cut short') });
    expect(msg.content).toEqual([{ type: 'text', text: 'Echo: a ' }]);
    expect(msg.stop_reason).toBe('max_tokens');
    expect(msg.usage.output_tokens).toBe(2);
  });

  test('messages.stream: exact event order, and the final message equals the non-streamed one', async () => {
    const prompt = 'Stream this answer back to me';
    const text = `Echo: ${prompt}`;
    const stream = anthropic.messages.stream({ model: SONNET, max_tokens: 64, messages: user(prompt) });
    const types: string[] = [];
    const deltas: string[] = [];
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') deltas.push(event.delta.text);
      if (event.type === 'message_start') expect(event.message.usage.input_tokens).toBe(simTokens(prompt.length));
      if (event.type === 'message_delta') {
        expect(event.delta.stop_reason).toBe('end_turn');
        expect(event.usage.output_tokens).toBe(simTokens(text.length));
      }
    }
    // The SDK drops ping events; the raw-stream test below sees them.
    expect(types).toEqual([
      'message_start',
      'content_block_start',
      ...Array<string>(simPieces(text)).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(deltas.length).toBeGreaterThanOrEqual(3);
    expect(deltas.join('')).toBe(text);
    const final = await stream.finalMessage();
    const once = await anthropic.messages.create({ model: SONNET, max_tokens: 64, messages: user(prompt) });
    expect(final.content).toEqual(once.content);
    expect(final.content).toEqual([{ type: 'text', text }]);
    expect(final.stop_reason).toBe(once.stop_reason);
    expect(final.usage.input_tokens).toBe(once.usage.input_tokens);
    expect(final.usage.output_tokens).toBe(once.usage.output_tokens);
  });

  test('the raw stream: event/data frames with ping second, no [DONE], content-type text/event-stream', async () => {
    const prompt = 'raw frames';
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ model: HAIKU, max_tokens: 64, stream: true, messages: user(prompt) }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = await readSse(res);
    const names = frames.map((f) => f.event);
    expect(names).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      ...Array<string>(simPieces(`Echo: ${prompt}`)).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    for (const f of frames) expect((JSON.parse(f.data) as { type: string }).type).toBe(f.event);
    expect(frames.some((f) => f.data === '[DONE]')).toBe(false);
  });
});

describe('tools', () => {
  const tools = [
    {
      name: 'get_weather',
      description: 'The weather in a city',
      input_schema: { type: 'object' as const, properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city', 'days'] },
    },
  ];
  const question = 'What is the weather in Paris? [sim:tool]';

  test('a tool_use block, then a follow-up with the tool_result gets a text answer', async () => {
    const first = await anthropic.messages.create({ model: HAIKU, max_tokens: 256, tools, messages: user(question) });
    expect(first.stop_reason).toBe('tool_use');
    expect(first.content).toHaveLength(1);
    const call = first.content[0]!;
    if (call.type !== 'tool_use') throw new Error(`expected tool_use, got ${call.type}`);
    expect(call.id).toMatch(/^toolu_/);
    expect(call.name).toBe('get_weather');
    expect(call.input).toEqual({ city: 'sim', days: 1 });

    const followUp = await anthropic.messages.create({
      model: HAIKU,
      max_tokens: 256,
      tools,
      messages: [
        { role: 'user', content: question },
        { role: 'assistant', content: [{ type: 'tool_use', id: call.id, name: call.name, input: call.input }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'Sunny, 21 C' }] },
      ],
    });
    expect(followUp.stop_reason).toBe('end_turn');
    expect(followUp.content).toEqual([{ type: 'text', text: 'Echo: Sunny, 21 C' }]);
  });

  test('streamed: the tool_use block starts with input {} and its input arrives as input_json_delta pieces', async () => {
    const stream = anthropic.messages.stream({ model: HAIKU, max_tokens: 256, tools, messages: user(question) });
    const partial: string[] = [];
    let start: unknown = null;
    for await (const event of stream) {
      if (event.type === 'content_block_start') start = event.content_block;
      if (event.type === 'content_block_delta') {
        if (event.delta.type !== 'input_json_delta') throw new Error(`unexpected delta ${event.delta.type}`);
        partial.push(event.delta.partial_json);
      }
    }
    expect(start).toMatchObject({ type: 'tool_use', name: 'get_weather', input: {} });
    expect(partial.length).toBeGreaterThanOrEqual(3);
    expect(JSON.parse(partial.join(''))).toEqual({ city: 'sim', days: 1 });
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content[0]).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'sim', days: 1 } });
  });
});

describe('extended thinking', () => {
  const prompt = 'Is 91 a prime number?';

  test('a thinking block with a signature comes before the text', async () => {
    const msg = await anthropic.messages.create({
      model: SONNET,
      max_tokens: 2048,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: user(prompt),
    });
    expect(msg.content.map((b) => b.type)).toEqual(['thinking', 'text']);
    const thinking = msg.content[0]!;
    if (thinking.type !== 'thinking') throw new Error('no thinking block');
    expect(thinking.thinking).toBe(`Simulated reasoning about: ${prompt}`);
    expect(thinking.signature).toMatch(/^[A-Za-z0-9+/]{20,}={0,2}$/);
    expect(msg.content[1]).toEqual({ type: 'text', text: `Echo: ${prompt}` });
  });

  test('streamed: thinking_delta pieces then one signature_delta, then the text block', async () => {
    const stream = anthropic.messages.stream({ model: SONNET, max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: user(prompt) });
    const deltaTypes: string[] = [];
    const thinking: string[] = [];
    let signature = '';
    for await (const event of stream) {
      if (event.type !== 'content_block_delta') continue;
      deltaTypes.push(`${event.index}:${event.delta.type}`);
      if (event.delta.type === 'thinking_delta') thinking.push(event.delta.thinking);
      if (event.delta.type === 'signature_delta') signature = event.delta.signature;
    }
    const thinkingText = `Simulated reasoning about: ${prompt}`;
    expect(deltaTypes).toEqual([
      ...Array<string>(simPieces(thinkingText)).fill('0:thinking_delta'),
      '0:signature_delta',
      ...Array<string>(simPieces(`Echo: ${prompt}`)).fill('1:text_delta'),
    ]);
    expect(thinking.join('')).toBe(thinkingText);
    const final = await stream.finalMessage();
    expect(final.content[0]).toEqual({ type: 'thinking', thinking: thinkingText, signature });
    expect(signature.length).toBeGreaterThan(20);
  });
});

describe('media', () => {
  // The simulator checks the decoded bytes (PNG magic, %PDF-): a 200 means they arrived intact.
  test('an image block (a real PNG, base64)', async () => {
    const msg = await anthropic.messages.create({
      model: HAIKU,
      max_tokens: 64,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: TINY_PNG_BASE64 } },
            { type: 'text', text: 'Describe the image' },
          ],
        },
      ],
    });
    expect(msg.content).toEqual([{ type: 'text', text: 'Echo: Describe the image' }]);
    expect(msg.stop_reason).toBe('end_turn');
  });

  test('a PDF document block', async () => {
    const msg = await anthropic.messages.create({
      model: HAIKU,
      max_tokens: 64,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: TINY_PDF_BASE64 } },
            { type: 'text', text: 'Summarise the PDF' },
          ],
        },
      ],
    });
    expect(msg.content).toEqual([{ type: 'text', text: 'Echo: Summarise the PDF' }]);
  });
});

describe('authentication and headers', () => {
  const ask = (client: Anthropic) => client.messages.create({ model: HAIKU, max_tokens: 16, messages: user('auth check') });

  test('x-api-key alone works (SDK with the header set, and raw fetch)', async () => {
    const seen: Headers[] = [];
    const client = new Anthropic({
      apiKey: key,
      baseURL: gw.url,
      maxRetries: 0,
      fetch: recordingFetch(seen),
      defaultHeaders: { 'x-api-key': key, authorization: null },
    });
    const msg = await ask(client);
    expect(msg.content).toEqual([{ type: 'text', text: 'Echo: auth check' }]);
    expect(seen[0]!.get('x-api-key')).toBe(key);
    expect(seen[0]!.get('authorization')).toBeNull();

    const raw = await postMessages({ model: HAIKU, max_tokens: 16, messages: user('auth check') }, { 'x-api-key': key });
    expect(raw.status).toBe(200);
    expect(raw.json.content).toEqual([{ type: 'text', text: 'Echo: auth check' }]);
  });

  test('Authorization: Bearer alone works (SDK apiKey and authToken, and raw fetch)', async () => {
    const seen: Headers[] = [];
    // SDK 1.12 sends apiKey as a Bearer token.
    const viaApiKey = new Anthropic({ apiKey: key, baseURL: gw.url, maxRetries: 0, fetch: recordingFetch(seen) });
    expect((await ask(viaApiKey)).stop_reason).toBe('end_turn');
    const viaToken = new Anthropic({ authToken: key, baseURL: gw.url, maxRetries: 0, fetch: recordingFetch(seen) });
    expect((await ask(viaToken)).stop_reason).toBe('end_turn');
    for (const h of seen) {
      expect(h.get('authorization')).toBe(`Bearer ${key}`);
      expect(h.get('x-api-key')).toBeNull();
    }
    const raw = await postMessages({ model: HAIKU, max_tokens: 16, messages: user('auth check') }, { authorization: `Bearer ${key}` });
    expect(raw.status).toBe(200);
  });

  test('anthropic-version is ignored: any value, or none, works', async () => {
    const seen: Headers[] = [];
    const odd = new Anthropic({
      apiKey: key,
      baseURL: gw.url,
      maxRetries: 0,
      fetch: recordingFetch(seen),
      defaultHeaders: { 'anthropic-version': 'not-a-version' },
    });
    expect((await ask(odd)).content).toEqual([{ type: 'text', text: 'Echo: auth check' }]);
    expect(seen[0]!.get('anthropic-version')).toBe('not-a-version');
    for (const version of ['1999-01-01', '2023-06-01']) {
      const res = await postMessages({ model: HAIKU, max_tokens: 16, messages: user('v') }, { 'x-api-key': key, 'anthropic-version': version });
      expect(res.status).toBe(200);
    }
    const none = await postMessages({ model: HAIKU, max_tokens: 16, messages: user('v') }, { 'x-api-key': key });
    expect(none.status).toBe(200);
  });

  test('401 authentication_error: a wrong key, a foreign sk-ant- key, no key', async () => {
    const wrong = new Anthropic({ apiKey: 'sk-this-is-not-a-gateway-key', baseURL: gw.url, maxRetries: 0 });
    const e1 = await ask(wrong).catch((e: unknown) => e);
    expect(e1).toBeInstanceOf(AuthenticationError);
    expect((e1 as AuthenticationError).status).toBe(401);
    expect((e1 as AuthenticationError).type).toBe('authentication_error');
    expect((e1 as AuthenticationError).apiMessage).toMatch(/Incorrect API key/);

    const foreign = new Anthropic({ apiKey: `sk-ant-api03-${'x'.repeat(40)}`, baseURL: gw.url, maxRetries: 0 });
    const e2 = await ask(foreign).catch((e: unknown) => e);
    expect(e2).toBeInstanceOf(AuthenticationError);
    expect((e2 as AuthenticationError).apiMessage).toMatch(/another provider/);

    const foreignHeader = await postMessages({ model: HAIKU, max_tokens: 16, messages: user('x') }, { 'x-api-key': `sk-ant-api03-${'y'.repeat(40)}` });
    expect(foreignHeader.status).toBe(401);
    expect(foreignHeader.json.error.message).toMatch(/another provider/);

    const none = await postMessages({ model: HAIKU, max_tokens: 16, messages: user('x') }, {});
    expect(none.status).toBe(401);
    expect(none.json).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    expect(none.json.error.message).toMatch(/didn't provide an API key/);
  });
});

describe("Anthropic's routes the gateway does not serve", () => {
  test("message batches are a 404 not_found_error in Anthropic's shape, which its SDK raises as NotFoundError", async () => {
    const err = await anthropic.messages.batches.list().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect((err as NotFoundError).type).toBe('not_found_error');
    expect((err as NotFoundError).apiMessage).toMatch(/Unknown route: GET \/v1\/messages\/batches/);
  });
});

describe('compatibility extensions', () => {
  test('stop cuts the echo with stop_reason stop_sequence', async () => {
    const body = { model: HAIKU, max_tokens: 64, messages: user('hello gateway world'), stop: 'way' };
    const msg = await anthropic.messages.create(body);
    expect(msg.content).toEqual([{ type: 'text', text: 'Echo: hello gate' }]);
    expect(msg.stop_reason).toBe('stop_sequence');
    expect(msg.stop_sequence).toBe('way');

    // An array joins stop_sequences; the earliest match wins.
    const both = { model: HAIKU, max_tokens: 64, messages: user('alpha beta gamma'), stop_sequences: ['gamma'], stop: ['beta', 'zzz'] };
    const msg2 = await anthropic.messages.create(both);
    expect(msg2.content).toEqual([{ type: 'text', text: 'Echo: alpha ' }]);
    expect(msg2.stop_sequence).toBe('beta');
  });

  test('user, n: 1, penalties, logit_bias, seed and response_format are accepted (the strict upstream never sees them)', async () => {
    const body = {
      model: HAIKU,
      max_tokens: 64,
      messages: user('compat fields'),
      user: 'end-user-42',
      n: 1,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
      logit_bias: { '50256': -100 },
      seed: 7,
    };
    const msg = await anthropic.messages.create(body);
    expect(msg.content).toEqual([{ type: 'text', text: 'Echo: compat fields' }]);

    // response_format json_object becomes a system instruction: more input tokens than without it.
    const plain = await anthropic.messages.create({ model: HAIKU, max_tokens: 64, messages: user('json please') });
    const formatted = { model: HAIKU, max_tokens: 64, messages: user('json please'), response_format: { type: 'json_object' } };
    const withFormat = await anthropic.messages.create(formatted);
    expect(withFormat.usage.input_tokens).toBeGreaterThan(plain.usage.input_tokens);
  });
});

describe('validation: every rule is a 400 invalid_request_error naming the parameter', () => {
  const base = { model: HAIKU, max_tokens: 64, messages: user('validate me') };
  // [case, body, the parameter the message names, what it says about it]
  const cases: [string, Record<string, unknown>, string, RegExp][] = [
    ['temperature > 1', { ...base, temperature: 1.5 }, 'temperature', /<=1/],
    ['top_p > 1', { ...base, top_p: 1.5 }, 'top_p', /<=1/],
    ['thinking budget < 1024', { ...base, max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 1000 } }, 'thinking.budget_tokens', />=1024/],
    ['thinking budget > 32768', { ...base, max_tokens: 64_000, thinking: { type: 'enabled', budget_tokens: 40_000 } }, 'thinking.budget_tokens', /<=32768/],
    [
      'thinking budget >= max_tokens',
      { ...base, max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 2048 } },
      'thinking.budget_tokens',
      /less than max_tokens \(2048\)/,
    ],
    [
      'temperature other than 1 with thinking',
      { ...base, max_tokens: 4096, temperature: 0.5, thinking: { type: 'enabled', budget_tokens: 1024 } },
      'temperature',
      /thinking/,
    ],
    ['stop with 5 entries', { ...base, stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop', /at most 4/],
    ['presence_penalty 3', { ...base, presence_penalty: 3 }, 'presence_penalty', /<=2/],
    ['frequency_penalty -3', { ...base, frequency_penalty: -3 }, 'frequency_penalty', />=-2/],
    ['logit_bias 101', { ...base, logit_bias: { '50256': 101 } }, 'logit_bias.50256', /<=100/],
    [
      'a text/plain document',
      {
        ...base,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain text' } },
              { type: 'text', text: 'read it' },
            ],
          },
        ],
      },
      'messages[0].content[0].source.type',
      /PDF is the only supported document format/,
    ],
    [
      'image bytes that are not the declared type',
      { ...base, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: TINY_PNG_BASE64 } }] }] },
      'messages[0].content[0].source.data',
      /not a image\/jpeg file/,
    ],
    [
      'a PDF whose bytes are not a PDF',
      {
        ...base,
        messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: TINY_PNG_BASE64 } }] }],
      },
      'messages[0].content[0].source.data',
      /not a application\/pdf file/,
    ],
    [
      'an unknown block type',
      { ...base, messages: [{ role: 'user', content: [{ type: 'video', url: 'x' }] }] },
      'messages[0].content[0].type',
      /must be one of text, image/,
    ],
    ['role system', { ...base, messages: [{ role: 'system', content: 'you are a bot' }] }, 'messages[0].role', /top-level 'system'/],
    ['missing max_tokens', { model: HAIKU, messages: user('x') }, 'max_tokens', /Missing required parameter/],
    ['messages empty', { ...base, messages: [] }, 'messages', /at least one message/],
    ['n = 2', { ...base, n: 2 }, 'n', /only n = 1/],
  ];

  test.each(cases)('%s', async (_name, body, param, problem) => {
    const res = await postMessages(body);
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(res.json.error.message).toContain(`'${param}'`);
    expect(res.json.error.message).toMatch(problem);
    expect(res.headers.get('request-id')).toMatch(/^req_/);
  });

  test('through the SDK: BadRequestError with the invalid_request_error type', async () => {
    // SDK 1.12 no longer types temperature: a variable carries it past the literal check.
    const body = { model: HAIKU, max_tokens: 64, temperature: 1.5, messages: user('x') };
    const err = await anthropic.messages.create(body).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect((err as BadRequestError).type).toBe('invalid_request_error');
    expect((err as BadRequestError).apiMessage).toContain('temperature');
  });
});

describe('model routing and bad bodies', () => {
  const askModel = (model: string) => anthropic.messages.create({ model, max_tokens: 16, messages: user('which endpoint?') }).catch((e: unknown) => e);

  test('a non-native model points to /v1/chat/completions', async () => {
    const err = await askModel('gpt-4o-mini');
    expect(err).toBeInstanceOf(BadRequestError);
    expect((err as BadRequestError).apiMessage).toContain('/v1/chat/completions');
  });

  test('a responses-only model points to the responses API', async () => {
    const err = await askModel('o3-pro');
    expect(err).toBeInstanceOf(BadRequestError);
    expect((err as BadRequestError).apiMessage).toMatch(/responses/i);
  });

  test('an unknown model and a video model are 400s', async () => {
    const unknown = await askModel('cm-nonexistent-9');
    expect(unknown).toBeInstanceOf(BadRequestError);
    expect((unknown as BadRequestError).apiMessage).toMatch(/Unknown model 'cm-nonexistent-9'/);
    const video = await askModel('vidgen3');
    expect(video).toBeInstanceOf(BadRequestError);
    expect((video as BadRequestError).apiMessage).toMatch(/video model/);
  });

  test('invalid JSON is a 400 in the Anthropic shape', async () => {
    const res = await postMessages('{"model": "cm-haiku-4.5", "max_tokens": ');
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(res.json.error.message).toMatch(/not valid JSON/);
  });
});

describe('upstream faults', () => {
  test('an upstream 429 passes through as RateLimitError with retry-after', async () => {
    const err = await anthropic.messages.create({ model: HAIKU, max_tokens: 16, messages: user(`slow down ${nonce()} [sim:429]`) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    const e = err as RateLimitError;
    expect(e.status).toBe(429);
    expect(e.type).toBe('rate_limit_error');
    expect(e.headers.get('retry-after')).toBe('1');
  });

  test('a mid-stream error surfaces as an error from the SDK stream, after some deltas; usage says failed', async () => {
    const keyName = `midstream-${nonce()}`;
    const ownKey = await gw.issueKey(keyName);
    const client = new Anthropic({ apiKey: ownKey, baseURL: gw.url, maxRetries: 0 });
    const requestId = `req-midstream-${nonce()}`;
    const stream = client.messages.stream(
      { model: HAIKU, max_tokens: 64, messages: user(`this stream will break ${nonce()} [sim:midstream-error]`) },
      { headers: { 'x-request-id': requestId } },
    );
    const seen: string[] = [];
    let caught: unknown = null;
    try {
      for await (const event of stream) seen.push(event.type);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(APIError);
    expect((caught as APIError).type).toBe('overloaded_error');
    expect(seen).toContain('content_block_delta');
    expect(seen).not.toContain('message_stop');
    const row = await usageRowFor(gw.url, await keyIdByName(gw.url, keyName), requestId);
    expect(row).toMatchObject({ outcome: 'failed', streamed: true, endpoint: 'messages', model: HAIKU, channel: 'sim-anthropic' });
  });

  test('the raw mid-stream error is an Anthropic event: error frame and the stream ends there', async () => {
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ model: HAIKU, max_tokens: 64, stream: true, messages: user(`raw break ${nonce()} [sim:midstream-error]`) }),
    });
    expect(res.status).toBe(200);
    const frames: SseFrame[] = await readSse(res);
    const last = frames[frames.length - 1]!;
    expect(last.event).toBe('error');
    expect(JSON.parse(last.data)).toEqual({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    expect(frames.filter((f) => f.event === 'error')).toHaveLength(1);
  });
});

describe('usage', () => {
  test('recorded per key and model, with the same numbers the client saw', async () => {
    const keyName = `usage-${nonce()}`;
    const ownKey = await gw.issueKey(keyName);
    const keyId = await keyIdByName(gw.url, keyName);
    expect((await usageOf(gw.url, keyId)).totals).toEqual([]);

    const client = new Anthropic({ apiKey: ownKey, baseURL: gw.url, maxRetries: 0 });
    const a = await client.messages.create({ model: HAIKU, max_tokens: 64, messages: user('first usage message') });
    const stream = client.messages.stream({ model: HAIKU, max_tokens: 64, messages: user('second usage message, streamed') });
    const b = await stream.finalMessage();
    const c = await client.messages.create({ model: SONNET, max_tokens: 64, system: 'sys', messages: user('third usage message') });

    const usage = await usageOf(gw.url, keyId);
    expect(usage.key_id).toBe(keyId);
    expect(usage.totals).toEqual([
      {
        model: HAIKU,
        requests: 2,
        input_tokens: a.usage.input_tokens + b.usage.input_tokens,
        output_tokens: a.usage.output_tokens + b.usage.output_tokens,
        cache_creation_tokens: 0,
        cache_read_tokens: 0,
      },
      { model: SONNET, requests: 1, input_tokens: c.usage.input_tokens, output_tokens: c.usage.output_tokens, cache_creation_tokens: 0, cache_read_tokens: 0 },
    ]);
    expect(usage.recent).toHaveLength(3);
    for (const row of usage.recent) expect(row).toMatchObject({ channel: 'sim-anthropic', endpoint: 'messages', outcome: 'completed' });
    const streamed = usage.recent.filter((r) => r.streamed);
    expect(streamed).toHaveLength(1);
    expect(streamed[0]).toMatchObject({ model: HAIKU, input_tokens: simTokens('second usage message, streamed'.length), output_tokens: b.usage.output_tokens });
  });
});
