/**
 * Text models on POST /v1/chat/completions through the official openai SDK, against the demo
 * channels (the simulator's Chat Completions API): answers, streams and their chunk order,
 * the usage chunk only on request (usage recorded either way), tools, errors in OpenAI's
 * classes, and GET /v1/models through both official SDKs.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { APIError } from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { startGateway, type Gateway } from '../support/stack';
import { keyIdByName, nonce, readSse, simPieces, simTokens, usageOf, usageRowFor } from '../support/text';

let gw: Gateway;
let key: string;
let openai: OpenAI;

const MINI = 'gpt-4o-mini';
const user = (content: string) => [{ role: 'user' as const, content }];

beforeAll(async () => {
  gw = await startGateway({ noWorker: true });
  key = await gw.issueKey('chat-text');
  openai = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
}, 120_000);

afterAll(async () => {
  await gw?.stop();
}, 120_000);

async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

describe('answers', () => {
  test('non-streamed: the echo, finish_reason stop and the simulator token counts', async () => {
    const prompt = 'Hello chat gateway';
    const system = 'You are terse.';
    const completion = await openai.chat.completions.create({ model: MINI, messages: [{ role: 'system', content: system }, ...user(prompt)] });
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe(MINI);
    expect(completion.choices).toHaveLength(1);
    expect(completion.choices[0]!.message).toMatchObject({ role: 'assistant', content: `Echo: ${prompt}` });
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    const promptTokens = simTokens(system.length + prompt.length);
    const completionTokens = simTokens(`Echo: ${prompt}`.length);
    expect(completion.usage).toMatchObject({ prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens });
  });

  test('max_tokens cuts the answer with finish_reason length; stop cuts it with stop', async () => {
    const cut = await openai.chat.completions.create({ model: MINI, max_tokens: 2, messages: user('a long sentence to cut') });
    expect(cut.choices[0]!.message.content).toBe('Echo: a ');
    expect(cut.choices[0]!.finish_reason).toBe('length');
    const stopped = await openai.chat.completions.create({ model: MINI, stop: ['way'], messages: user('hello gateway') });
    expect(stopped.choices[0]!.message.content).toBe('Echo: hello gate');
    expect(stopped.choices[0]!.finish_reason).toBe('stop');
  });

  test('streamed: role chunk, content chunks, finish chunk; the joined content equals the non-streamed one; no usage chunk', async () => {
    const prompt = 'Stream me some chat text';
    const text = `Echo: ${prompt}`;
    const chunks = await collect(await openai.chat.completions.create({ model: MINI, stream: true, messages: user(prompt) }));
    expect(chunks.length).toBe(1 + simPieces(text) + 1);
    const [first, ...rest] = chunks;
    const last = rest.pop()!;
    expect(first!.choices[0]!.delta).toMatchObject({ role: 'assistant', content: '' });
    expect(first!.choices[0]!.finish_reason).toBeNull();
    for (const c of rest) {
      expect(c.object).toBe('chat.completion.chunk');
      expect(c.choices[0]!.delta.role).toBeUndefined();
      expect(c.choices[0]!.delta.content).toMatch(/.+/);
      expect(c.choices[0]!.finish_reason).toBeNull();
    }
    expect(last.choices[0]!.delta).toEqual({});
    expect(last.choices[0]!.finish_reason).toBe('stop');
    const joined = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    const once = await openai.chat.completions.create({ model: MINI, messages: user(prompt) });
    expect(joined).toBe(once.choices[0]!.message.content);
    expect(joined).toBe(text);
    // The gateway asked the upstream for usage; the client did not, so it gets none.
    expect(chunks.every((c) => c.choices.length === 1)).toBe(true);
    expect(chunks.some((c) => c.usage)).toBe(false);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
  });

  test('raw stream: data lines only, ending with data: [DONE], and no usage line', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MINI, stream: true, messages: user('raw chunks') }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = await readSse(res);
    expect(frames.every((f) => f.event === null)).toBe(true);
    expect(frames[frames.length - 1]!.data).toBe('[DONE]');
    const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.data) as { choices: unknown[]; usage?: unknown });
    expect(chunks.length).toBe(1 + simPieces('Echo: raw chunks') + 1);
    expect(chunks.filter((c) => c.choices.length === 0)).toEqual([]);
    expect(chunks.filter((c) => c.usage !== undefined && c.usage !== null)).toEqual([]);
  });
});

describe('usage', () => {
  test('stream_options.include_usage: a last chunk with choices [] and the usage', async () => {
    const prompt = 'count my tokens please';
    const chunks = await collect(
      await openai.chat.completions.create({ model: MINI, stream: true, stream_options: { include_usage: true }, messages: user(prompt) }),
    );
    const last = chunks[chunks.length - 1]!;
    expect(last.choices).toEqual([]);
    const completionTokens = simTokens(`Echo: ${prompt}`.length);
    expect(last.usage).toEqual({
      prompt_tokens: simTokens(prompt.length),
      completion_tokens: completionTokens,
      total_tokens: simTokens(prompt.length) + completionTokens,
    });
    expect(chunks.slice(0, -1).every((c) => c.usage === null && c.choices.length === 1)).toBe(true);
    expect(chunks[chunks.length - 2]!.choices[0]!.finish_reason).toBe('stop');
  });

  test('recorded per key and model whether or not the client asked for the usage chunk', async () => {
    const keyName = `chat-usage-${nonce()}`;
    const ownKey = await gw.issueKey(keyName);
    const keyId = await keyIdByName(gw.url, keyName);
    const client = new OpenAI({ apiKey: ownKey, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const silentPrompt = 'streamed without a usage chunk';
    const silentId = `req-silent-${nonce()}`;
    const silent = await collect(
      await client.chat.completions.create({ model: MINI, stream: true, messages: user(silentPrompt) }, { headers: { 'x-request-id': silentId } }),
    );
    expect(silent.some((c) => c.usage)).toBe(false);
    const plain = await client.chat.completions.create({ model: 'gpt-4.1', messages: user('not streamed at all') });

    const row = await usageRowFor(gw.url, keyId, silentId);
    expect(row).toMatchObject({
      model: MINI,
      channel: 'sim-openai-chat',
      endpoint: 'chat',
      streamed: true,
      outcome: 'completed',
      input_tokens: simTokens(silentPrompt.length),
      output_tokens: simTokens(`Echo: ${silentPrompt}`.length),
    });
    const usage = await usageOf(gw.url, keyId);
    expect(usage.totals).toEqual([
      {
        model: 'gpt-4.1',
        requests: 1,
        input_tokens: plain.usage!.prompt_tokens,
        output_tokens: plain.usage!.completion_tokens,
        cache_creation_tokens: 0,
        cache_read_tokens: 0,
      },
      { model: MINI, requests: 1, input_tokens: row.input_tokens, output_tokens: row.output_tokens, cache_creation_tokens: 0, cache_read_tokens: 0 },
    ]);
  });
});

describe('tools', () => {
  const tools = [
    {
      type: 'function' as const,
      function: {
        name: 'lookup_order',
        description: 'Find an order',
        parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      },
    },
  ];

  test('[sim:tool] answers tool_calls, non-streamed and streamed', async () => {
    const completion = await openai.chat.completions.create({ model: MINI, tools, messages: user('Where is order 42? [sim:tool]') });
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toHaveLength(1);
    const call = choice.message.tool_calls![0]!;
    if (call.type !== 'function') throw new Error(`unexpected tool call type ${call.type}`);
    expect(call.id).toMatch(/^call_/);
    expect(call.function).toEqual({ name: 'lookup_order', arguments: '{}' });

    const chunks = await collect(await openai.chat.completions.create({ model: MINI, tools, stream: true, messages: user('Where is order 43? [sim:tool]') }));
    const calls = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(calls[0]).toMatchObject({ index: 0, id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'lookup_order', arguments: '' } });
    expect(calls.map((c) => c.function?.arguments ?? '').join('')).toBe('{}');
    expect(chunks[chunks.length - 1]!.choices[0]!.finish_reason).toBe('tool_calls');
  });

  test('a follow-up with the tool result gets a text answer', async () => {
    const completion = await openai.chat.completions.create({
      model: MINI,
      tools,
      messages: [
        { role: 'user', content: 'Where is order 42? [sim:tool]' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup_order', arguments: '{"id":"42"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'shipped' },
        { role: 'user', content: 'Thanks, summarise it' },
      ],
    });
    expect(completion.choices[0]!.message.content).toBe('Echo: Thanks, summarise it');
    expect(completion.choices[0]!.finish_reason).toBe('stop');
  });
});

describe('errors', () => {
  const ask = (model: string, extra: Record<string, unknown> = {}) => {
    const body = { model, messages: user('error check'), ...extra };
    return openai.chat.completions.create(body).catch((e: unknown) => e);
  };

  test('401 AuthenticationError: wrong key, foreign key', async () => {
    for (const [bad, says] of [
      ['sk-wrong-key', /Incorrect API key/],
      [`sk-proj-${'z'.repeat(40)}`, /another provider/],
    ] as const) {
      const client = new OpenAI({ apiKey: bad, baseURL: `${gw.url}/v1`, maxRetries: 0 });
      const err = await client.chat.completions.create({ model: MINI, messages: user('x') }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
      expect((err as APIError).status).toBe(401);
      expect((err as APIError).code).toBe('invalid_api_key');
      expect((err as APIError).message).toMatch(says);
    }
  });

  test('400 BadRequestError: temperature 3, a stop of 5, naming the parameter', async () => {
    const temp = await ask(MINI, { temperature: 3 });
    expect(temp).toBeInstanceOf(OpenAI.BadRequestError);
    expect((temp as APIError).param).toBe('temperature');
    const stop = await ask(MINI, { stop: ['a', 'b', 'c', 'd', 'e'] });
    expect(stop).toBeInstanceOf(OpenAI.BadRequestError);
    expect((stop as APIError).param).toBe('stop');
    expect((stop as APIError).message).toMatch(/at most 4/);
  });

  test('400 BadRequestError: unknown model, a cm model (-> /v1/messages), a responses-only model', async () => {
    const unknown = await ask('gpt-nonexistent-7');
    expect(unknown).toBeInstanceOf(OpenAI.BadRequestError);
    expect((unknown as APIError).code).toBe('model_not_found');
    expect((unknown as APIError).param).toBe('model');
    const native = await ask('cm-sonnet-4.5');
    expect(native).toBeInstanceOf(OpenAI.BadRequestError);
    expect((native as APIError).message).toContain('/v1/messages');
    const responses = await ask('o3-pro');
    expect(responses).toBeInstanceOf(OpenAI.BadRequestError);
    expect((responses as APIError).message).toMatch(/responses/);
  });

  test('an upstream 429 is a RateLimitError with retry-after', async () => {
    const err = await openai.chat.completions.create({ model: MINI, messages: user(`too fast ${nonce()} [sim:429]`) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((err as APIError).status).toBe(429);
    expect((err as APIError).headers?.get('retry-after')).toBe('1');
  });

  test('a mid-stream error makes the SDK stream throw, after some content', async () => {
    const prompt = `break midway ${nonce()} [sim:midstream-error]`;
    const stream = await openai.chat.completions.create({ model: MINI, stream: true, messages: user(prompt) });
    const contents: string[] = [];
    let caught: unknown = null;
    try {
      for await (const chunk of stream) contents.push(chunk.choices[0]?.delta.content ?? '');
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(OpenAI.APIError);
    expect((caught as APIError).message).toMatch(/simulated by \[sim:midstream-error\]/);
    expect(contents.join('')).toMatch(/^Echo: /);
    expect(`Echo: ${prompt}`.startsWith(contents.join(''))).toBe(true);
    expect(contents.join('').length).toBeLessThan(`Echo: ${prompt}`.length);
  });
});

describe('models', () => {
  const expected = ['cm-opus-4-5-20251101', 'cm-sonnet-4.5', 'cm-haiku-4.5', 'gpt-4o-mini', 'vidgen3', 'motion-2'];

  test('openai.models.list() lists the text and video models', async () => {
    const ids: string[] = [];
    for await (const m of openai.models.list()) {
      expect(m.object).toBe('model');
      ids.push(m.id);
    }
    expect(ids).toEqual(expect.arrayContaining(expected));
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('anthropic.models.list() lists them too', async () => {
    const anthropic = new Anthropic({ apiKey: key, baseURL: gw.url, maxRetries: 0 });
    const ids: string[] = [];
    for await (const m of anthropic.models.list()) {
      expect(m.type).toBe('model');
      expect(m.display_name).toBe(m.id);
      ids.push(m.id);
    }
    expect(ids).toEqual(expect.arrayContaining(expected));
  });

  test('motion-2 on /v1/chat/completions still creates a video task', async () => {
    const stream = await openai.chat.completions.create({ model: 'motion-2', stream: true, messages: user('a paper boat on a pond [sim:ms=300]') });
    let first = '';
    for await (const chunk of stream) {
      first = chunk.choices[0]?.delta.content ?? '';
      break;
    }
    expect(first).toMatch(/^task_id: motion-2:\d+-[a-z0-9]+\n$/);
  });
});
