import Anthropic from '@anthropic-ai/sdk';
import { startSimulator, type RunningSimulator } from '../../simulator/server';

interface Block {
  type: string;
  text?: string;
  thinking?: string;
  signature?: string;
  id?: string;
  name?: string;
  input?: Record<string, unknown>;
}
interface Message {
  id: string;
  type: string;
  role: string;
  content: Block[];
  model: string;
  stop_reason: string;
  stop_sequence: string | null;
  usage: { input_tokens: number; output_tokens: number; cache_creation_input_tokens: number; cache_read_input_tokens: number };
}
interface AnthropicError {
  type: string;
  error: { type: string; message: string };
}
interface SseEvent {
  event: string;
  data: Record<string, unknown> & { type: string };
}

const HEADERS = { 'x-api-key': 'sim-key', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' };
const PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const PDF = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF').toString('base64');
const TOOLS = [
  {
    name: 'get_weather',
    description: 'Weather',
    input_schema: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city', 'days'] },
  },
];

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await startSimulator({ jobMs: 100 });
});
afterAll(async () => {
  await sim.close();
});

let seq = 0;
const uniq = (text: string) => `${text} #${Date.now()}-${(seq += 1)}`;

function post(body: unknown, headers: Record<string, string> = HEADERS, init: RequestInit = {}): Promise<Response> {
  return fetch(`${sim.url}/v1/messages`, { method: 'POST', headers, body: JSON.stringify(body), ...init });
}
const req = (content: unknown, extra: Record<string, unknown> = {}) => ({
  model: 'claude-sonnet-4-5',
  max_tokens: 1000,
  messages: [{ role: 'user', content }],
  ...extra,
});
async function errOf(res: Response): Promise<AnthropicError> {
  return (await res.json()) as AnthropicError;
}

function parseSse(text: string): SseEvent[] {
  return text
    .split('\n\n')
    .filter((b) => b.trim() !== '')
    .map((block) => {
      const lines = block.split('\n');
      expect(lines).toHaveLength(2);
      const [ev, data] = lines as [string, string];
      expect(ev.startsWith('event: ')).toBe(true);
      expect(data.startsWith('data: ')).toBe(true);
      return { event: ev.slice(7), data: JSON.parse(data.slice(6)) as SseEvent['data'] };
    });
}

describe('POST /v1/messages (non-streamed)', () => {
  it('echoes the last user message with deterministic usage and a request-id header', async () => {
    const prompt = 'x'.repeat(300);
    const res = await post({
      model: 'claude-sonnet-4-5',
      max_tokens: 1000,
      system: 'sys',
      messages: [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: prompt },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('request-id')).toMatch(/^req_/);
    const msg = (await res.json()) as Message;
    expect(msg.id).toMatch(/^msg_/);
    expect(msg).toMatchObject({ type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', stop_reason: 'end_turn', stop_sequence: null });
    const text = `Echo: ${'x'.repeat(200)}`;
    expect(msg.content).toEqual([{ type: 'text', text }]);
    expect(msg.usage).toEqual({
      input_tokens: Math.ceil((3 + 5 + 2 + 300) / 4),
      output_tokens: Math.ceil(text.length / 4),
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    });
  });

  it('accepts cm-* models, Bearer auth and block content (text, image, PDF document, tool_use, tool_result, thinking)', async () => {
    const res = await post(
      {
        model: 'cm-fast',
        max_tokens: 100,
        system: [{ type: 'text', text: 'be brief' }],
        temperature: 0.5,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'look' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_1PX } },
              { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF } },
            ],
          },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'hmm', signature: 'sig' },
              { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' },
              { type: 'text', text: 'thanks' },
            ],
          },
        ],
        tools: TOOLS,
      },
      { authorization: 'Bearer sim-key', 'content-type': 'application/json' },
    );
    expect(res.status).toBe(200);
    const msg = (await res.json()) as Message;
    expect(msg.model).toBe('cm-fast');
    expect(msg.content).toEqual([{ type: 'text', text: 'Echo: sunny\nthanks' }]);
  });

  it('validates the body: 400 invalid_request_error', async () => {
    const cases: unknown[] = [
      { model: 'claude-x', messages: [{ role: 'user', content: 'hi' }] }, // no max_tokens
      { model: 'claude-x', max_tokens: 10, messages: [] }, // empty messages
      { model: 'claude-x', max_tokens: 10, messages: [{ role: 'system', content: 'hi' }] }, // bad role
      req([{ type: 'image', source: { type: 'base64', media_type: 'image/bmp', data: PNG_1PX } }]), // bad media type
      req([{ type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: PNG_1PX } }]), // mismatching bytes
      req([{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PNG_1PX } }]), // not a PDF
      req('hi', { thinking: { type: 'enabled', budget_tokens: 512 } }), // budget < 1024
      req('hi', { max_tokens: 1024, thinking: { type: 'enabled', budget_tokens: 1024 } }), // budget >= max_tokens
      req('hi', { temperature: 3 }),
      req('hi', { tool_choice: { type: 'sometimes' } }),
      req('hi', { bogus: 1 }),
    ];
    for (const body of cases) {
      const res = await post(body);
      expect(res.status).toBe(400);
      const e = await errOf(res);
      expect(e.type).toBe('error');
      expect(e.error.type).toBe('invalid_request_error');
      expect(e.error.message.length).toBeGreaterThan(0);
    }
    const bad = await fetch(`${sim.url}/v1/messages`, { method: 'POST', headers: HEADERS, body: '{nope' });
    expect(bad.status).toBe(400);
    expect((await errOf(bad)).error.type).toBe('invalid_request_error');
  });

  it('401 authentication_error without a key (and with a wrong one when apiKey is set); 404 for other models', async () => {
    const res = await post(req('hi'), { 'content-type': 'application/json' });
    expect(res.status).toBe(401);
    expect(res.headers.get('request-id')).toMatch(/^req_/);
    expect(await errOf(res)).toEqual({ type: 'error', error: { type: 'authentication_error', message: expect.any(String) as string } });
    const gpt = await post(req('hi', { model: 'gpt-4o' }));
    expect(gpt.status).toBe(404);
    expect((await errOf(gpt)).error.type).toBe('not_found_error');
    const local = await startSimulator({ jobMs: 10, apiKey: 'right' });
    try {
      const wrong = await fetch(`${local.url}/v1/messages`, { method: 'POST', headers: { ...HEADERS, 'x-api-key': 'wrong' }, body: JSON.stringify(req('hi')) });
      expect(wrong.status).toBe(401);
      const right = await fetch(`${local.url}/v1/messages`, { method: 'POST', headers: { ...HEADERS, 'x-api-key': 'right' }, body: JSON.stringify(req('hi')) });
      expect(right.status).toBe(200);
    } finally {
      await local.close();
    }
  });

  it('413 request_too_large and unknown /v1/messages/* paths as not_found_error; count_tokens works', async () => {
    const big = await fetch(`${sim.url}/v1/messages`, { method: 'POST', headers: HEADERS, body: Buffer.alloc(65 * 1024 * 1024, 0x20) });
    expect(big.status).toBe(413);
    expect((await errOf(big)).error.type).toBe('request_too_large');
    const unknown = await fetch(`${sim.url}/v1/messages/nope`, { method: 'POST', headers: HEADERS, body: '{}' });
    expect(unknown.status).toBe(404);
    expect((await errOf(unknown)).error.type).toBe('not_found_error');
    const count = await fetch(`${sim.url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: HEADERS,
      body: JSON.stringify({ model: 'claude-x', messages: [{ role: 'user', content: 'abcdefgh' }] }),
    });
    expect(await count.json()).toEqual({ input_tokens: 2 });
  });

  it('[sim:tool] with tools answers a tool_use block; tool_choice tool/any force it; none suppresses it', async () => {
    const msg = (await (await post(req('weather? [sim:tool]', { tools: TOOLS }))).json()) as Message;
    expect(msg.stop_reason).toBe('tool_use');
    expect(msg.content).toHaveLength(1);
    expect(msg.content[0]).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'sim', days: 1 } });
    expect(msg.content[0]?.id).toMatch(/^toolu_/);
    const twoTools = [...TOOLS, { name: 'other', input_schema: { type: 'object' } }];
    const forced = (await (await post(req('plain', { tools: twoTools, tool_choice: { type: 'tool', name: 'other' } }))).json()) as Message;
    expect(forced.content[0]).toMatchObject({ type: 'tool_use', name: 'other', input: {} });
    const any = (await (await post(req('plain', { tools: TOOLS, tool_choice: { type: 'any' } }))).json()) as Message;
    expect(any.stop_reason).toBe('tool_use');
    const none = (await (await post(req('x [sim:tool]', { tools: TOOLS, tool_choice: { type: 'none' } }))).json()) as Message;
    expect(none.stop_reason).toBe('end_turn');
    const noTools = (await (await post(req('x [sim:tool]'))).json()) as Message;
    expect(noTools.content[0]?.type).toBe('text');
  });

  it('thinking enabled puts a signed thinking block first', async () => {
    const msg = (await (await post(req('ponder', { max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024 } }))).json()) as Message;
    expect(msg.content.map((b) => b.type)).toEqual(['thinking', 'text']);
    expect(msg.content[0]?.thinking).toContain('ponder');
    expect(msg.content[0]?.signature?.length).toBeGreaterThan(10);
    const chars = (msg.content[0]?.thinking?.length ?? 0) + 'Echo: ponder'.length;
    expect(msg.usage.output_tokens).toBe(Math.ceil(chars / 4));
  });

  it('stop_sequences cut the text; max_tokens truncates with stop_reason max_tokens', async () => {
    const stopped = (await (await post(req('alpha STOP beta', { stop_sequences: ['beta', 'STOP'] }))).json()) as Message;
    expect(stopped).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'STOP', content: [{ type: 'text', text: 'Echo: alpha ' }] });
    const short = (await (await post(req('a long prompt here', { max_tokens: 2 }))).json()) as Message;
    expect(short).toMatchObject({ stop_reason: 'max_tokens', stop_sequence: null, content: [{ type: 'text', text: 'Echo: a ' }] });
    expect(short.usage.output_tokens).toBe(2);
  });
});

describe('POST /v1/messages (streamed)', () => {
  it('emits the exact event order with a ping, several text deltas and final usage; no [DONE]', async () => {
    const res = await post(req('hello streaming world', { stream: true }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('request-id')).toMatch(/^req_/);
    const raw = await res.text();
    expect(raw).not.toContain('[DONE]');
    const events = parseSse(raw);
    for (const e of events) expect(e.data.type).toBe(e.event);
    const names = events.map((e) => e.event);
    const deltas = names.filter((n) => n === 'content_block_delta').length;
    expect(deltas).toBeGreaterThanOrEqual(3);
    expect(names).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      ...Array<string>(deltas).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const start = events[0]?.data as unknown as { message: Message };
    expect(start.message).toMatchObject({ type: 'message', role: 'assistant', content: [], stop_reason: null, model: 'claude-sonnet-4-5' });
    expect(start.message.usage.input_tokens).toBe(Math.ceil('hello streaming world'.length / 4));
    expect(events[2]?.data).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    const text = events
      .filter((e) => e.event === 'content_block_delta')
      .map((e) => e.data.delta as { type: string; text: string })
      .map((d) => {
        expect(d.type).toBe('text_delta');
        return d.text;
      })
      .join('');
    expect(text).toBe('Echo: hello streaming world');
    expect(events.at(-2)?.data).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: Math.ceil(text.length / 4) },
    });
  });

  it('streams thinking (thinking_delta + signature_delta) before text, and tool_use with input_json_delta pieces', async () => {
    const events = parseSse(
      await (await post(req('think [sim:tool]', { stream: true, max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024 }, tools: TOOLS }))).text(),
    );
    const starts = events.filter((e) => e.event === 'content_block_start').map((e) => e.data);
    expect(starts).toEqual([
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
      {
        type: 'content_block_start',
        index: 1,
        content_block: { type: 'tool_use', id: expect.stringMatching(/^toolu_/) as string, name: 'get_weather', input: {} },
      },
    ]);
    const deltas = events.filter((e) => e.event === 'content_block_delta').map((e) => e.data as unknown as { index: number; delta: Record<string, string> });
    const b0 = deltas.filter((d) => d.index === 0).map((d) => d.delta.type);
    expect(b0.at(-1)).toBe('signature_delta');
    expect(b0.slice(0, -1).every((t) => t === 'thinking_delta')).toBe(true);
    const json = deltas
      .filter((d) => d.index === 1)
      .map((d) => {
        expect(d.delta.type).toBe('input_json_delta');
        return d.delta.partial_json;
      });
    expect(json.length).toBeGreaterThan(1);
    expect(JSON.parse(json.join(''))).toEqual({ city: 'sim', days: 1 });
    const names = events.map((e) => e.event);
    expect(names.slice(0, 3)).toEqual(['message_start', 'ping', 'content_block_start']);
    expect(names.indexOf('content_block_stop')).toBeLessThan(names.lastIndexOf('content_block_start'));
    expect(events.at(-2)?.data).toMatchObject({ delta: { stop_reason: 'tool_use', stop_sequence: null } });
    expect(names.at(-1)).toBe('message_stop');
  });

  it('stop sequence in a stream sets stop_sequence in message_delta', async () => {
    const events = parseSse(await (await post(req('one two three', { stream: true, stop_sequences: ['two'] }))).text());
    expect(events.at(-2)?.data).toMatchObject({ delta: { stop_reason: 'stop_sequence', stop_sequence: 'two' } });
  });
});

describe('fault markers', () => {
  it.each([
    [429, 'rate_limit_error'],
    [500, 'api_error'],
    [529, 'overloaded_error'],
  ])('[sim:%i] answers %s before any byte', async (status, type) => {
    for (const stream of [false, true]) {
      const res = await post(req(`boom [sim:${status}]`, { stream }));
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
      expect(res.headers.get('request-id')).toMatch(/^req_/);
      expect((await errOf(res)).error.type).toBe(type);
      if (status === 429) expect(res.headers.get('retry-after')).toBe('1');
    }
  });

  it('markers are read from the last user message only', async () => {
    const res = await post({
      model: 'claude-x',
      max_tokens: 100,
      messages: [
        { role: 'user', content: '[sim:500]' },
        { role: 'assistant', content: 'x' },
        { role: 'user', content: 'fine' },
      ],
    });
    expect(res.status).toBe(200);
  });

  it('[sim:submit-5xx=N] and [sim:submit-429=N] fail the first N attempts of the same prompt', async () => {
    const p = uniq('retry me [sim:submit-429=1][sim:submit-5xx=2]');
    const statuses: number[] = [];
    for (let i = 0; i < 4; i += 1) statuses.push((await post(req(p))).status);
    expect(statuses).toEqual([429, 500, 503, 200]);
  });

  it('[sim:drop=1] destroys the connection once', async () => {
    const p = uniq('[sim:drop=1]');
    await expect(post(req(p))).rejects.toThrow();
    expect((await post(req(p))).status).toBe(200);
  });

  it('[sim:slow=MS] delays the first byte', async () => {
    const t0 = Date.now();
    const res = await post(req('slowly [sim:slow=200]', { stream: true }));
    expect(Date.now() - t0).toBeGreaterThanOrEqual(190);
    expect(res.status).toBe(200);
    await res.text();
  });

  it('[sim:delay=MS] spaces stream events', async () => {
    const t0 = Date.now();
    const events = parseSse(await (await post(req('spaced [sim:delay=20]', { stream: true }))).text());
    expect(Date.now() - t0).toBeGreaterThanOrEqual(20 * (events.length - 1) - 5);
  });

  it('[sim:midstream-error] sends some deltas then event: error (overloaded) and ends', async () => {
    const events = parseSse(await (await post(req('a fairly long prompt for many deltas [sim:midstream-error]', { stream: true }))).text());
    const names = events.map((e) => e.event);
    expect(names.slice(0, 4)).toEqual(['message_start', 'ping', 'content_block_start', 'content_block_delta']);
    expect(names.at(-1)).toBe('error');
    expect(names).not.toContain('message_stop');
    expect(events.at(-1)?.data).toEqual({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    const ok = await post(req('x [sim:midstream-error]'));
    expect(ok.status).toBe(200); // non-streamed: ignored
  });

  it('[sim:hang] sends message_start then nothing until the client aborts', async () => {
    const ac = new AbortController();
    const res = await post(req('wait [sim:hang]', { stream: true }), HEADERS, { signal: ac.signal });
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first.startsWith('event: message_start\n')).toBe(true);
    const next = await Promise.race([reader.read().then(() => 'data'), new Promise((r) => setTimeout(() => r('timeout'), 300))]);
    expect(next).toBe('timeout');
    ac.abort();
    await expect(reader.read()).rejects.toThrow();
    expect((await post(req('after hang'))).status).toBe(200);
  });

  it('text requests and tokens show in /_sim/stats', async () => {
    const local = await startSimulator({ jobMs: 10 });
    try {
      await fetch(`${local.url}/v1/messages`, { method: 'POST', headers: HEADERS, body: JSON.stringify(req('abcd')) });
      const st = (await (await fetch(`${local.url}/_sim/stats`)).json()) as {
        requests: Record<string, number>;
        text: { requests: number; inputTokens: number; outputTokens: number };
      };
      expect(st.requests['anthropic.messages']).toBe(1);
      expect(st.text).toEqual({ requests: 1, inputTokens: 1, outputTokens: 3 });
    } finally {
      await local.close();
    }
  });
});

describe('official @anthropic-ai/sdk against the simulator', () => {
  it('messages.create and messages.stream', async () => {
    const client = new Anthropic({ apiKey: 'sim-key', baseURL: sim.url, maxRetries: 0 });
    const msg = await client.messages.create({ model: 'claude-sim-1', max_tokens: 100, messages: [{ role: 'user', content: 'hi sdk' }] });
    expect(msg.content).toEqual([{ type: 'text', text: 'Echo: hi sdk' }]);
    expect(msg.stop_reason).toBe('end_turn');

    const stream = client.messages.stream({
      model: 'cm-sonnet',
      max_tokens: 2000,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [{ role: 'user', content: 'stream via sdk' }],
    });
    let streamed = '';
    stream.on('text', (t) => {
      streamed += t;
    });
    const final = await stream.finalMessage();
    expect(streamed).toBe('Echo: stream via sdk');
    expect(final.content.map((b) => b.type)).toEqual(['thinking', 'text']);
    expect(final.usage.output_tokens).toBeGreaterThan(0);

    const tool = await client.messages
      .stream({
        model: 'claude-x',
        max_tokens: 100,
        tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }],
        messages: [{ role: 'user', content: 'use it [sim:tool]' }],
      })
      .finalMessage();
    expect(tool.content[0]).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'sim' } });

    await expect(client.messages.create({ model: 'claude-x', max_tokens: 10, messages: [{ role: 'user', content: 'x [sim:529]' }] })).rejects.toMatchObject({
      status: 529,
    });
    const failing = client.messages.stream({
      model: 'claude-x',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'a long enough prompt [sim:midstream-error]' }],
    });
    await expect(failing.finalMessage()).rejects.toThrow(/Overloaded/);
  });
});
