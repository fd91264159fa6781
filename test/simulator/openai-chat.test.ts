import OpenAI from 'openai';
import { startSimulator, type RunningSimulator } from '../../simulator/server';

interface ToolCall {
  id: string;
  type: string;
  function: { name: string; arguments: string };
}
interface Completion {
  id: string;
  object: string;
  created: number;
  model: string;
  choices: Array<{ index: number; message: { role: string; content: string | null; tool_calls?: ToolCall[] }; finish_reason: string }>;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}
interface Delta {
  role?: string;
  content?: string | null;
  tool_calls?: Array<{ index: number; id?: string; type?: string; function?: { name?: string; arguments?: string } }>;
}
interface Chunk {
  id: string;
  object: string;
  model: string;
  choices: Array<{ index: number; delta: Delta; finish_reason: string | null }>;
  usage?: Completion['usage'] | null;
  error?: { message: string; type: string };
}
interface OpenAIError {
  error: { message: string; type: string; param: string | null; code: string | null };
}

const HEADERS = { authorization: 'Bearer sk-test', 'content-type': 'application/json' };
const TOOLS = [{ type: 'function', function: { name: 'lookup', description: 'Look up', parameters: { type: 'object', properties: {} } } }];

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
  return fetch(`${sim.url}/v1/chat/completions`, { method: 'POST', headers, body: JSON.stringify(body), ...init });
}
const req = (content: string, extra: Record<string, unknown> = {}) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], ...extra });
async function errOf(res: Response): Promise<OpenAIError['error']> {
  return ((await res.json()) as OpenAIError).error;
}

/** Every `data:` payload in order; the final `[DONE]` is kept as the string. */
function parseData(text: string): Array<Chunk | '[DONE]'> {
  return text
    .split('\n\n')
    .filter((b) => b.trim() !== '')
    .map((block) => {
      expect(block.startsWith('data: ')).toBe(true);
      const payload = block.slice(6);
      return payload === '[DONE]' ? '[DONE]' : (JSON.parse(payload) as Chunk);
    });
}

describe('POST /v1/chat/completions (non-streamed)', () => {
  it('echoes the last user message with usage and x-request-id', async () => {
    const res = await post({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'hello there' },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
    const c = (await res.json()) as Completion;
    expect(c.id).toMatch(/^chatcmpl-/);
    expect(c).toMatchObject({ object: 'chat.completion', model: 'gpt-4o-mini' });
    expect(c.choices).toEqual([
      { index: 0, message: { role: 'assistant', content: 'Echo: hello there', refusal: null, annotations: [] }, logprobs: null, finish_reason: 'stop' },
    ]);
    const prompt = Math.ceil((3 + 11) / 4);
    const completion = Math.ceil('Echo: hello there'.length / 4);
    expect(c.usage).toEqual({ prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });
  });

  it('accepts content parts and any non-claude/cm/sora/veo model; rejects those with 404', async () => {
    const res = await post({
      model: 'mistral-large',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'parts' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          ],
        },
      ],
    });
    expect(((await res.json()) as Completion).choices[0]?.message.content).toBe('Echo: parts');
    for (const model of ['claude-3', 'cm-fast', 'sora-2', 'veo-3']) {
      const r = await post(req('x', { model }));
      expect(r.status).toBe(404);
      expect(await errOf(r)).toMatchObject({ type: 'invalid_request_error', code: 'model_not_found' });
    }
  });

  it('validates the body and auth in the OpenAI error shape', async () => {
    const missing = await post({ messages: [{ role: 'user', content: 'x' }] });
    expect(missing.status).toBe(400);
    expect(await errOf(missing)).toMatchObject({ type: 'invalid_request_error', param: 'model', code: 'missing_required_parameter' });
    const unknown = await post(req('x', { bogus: true }));
    expect(await errOf(unknown)).toMatchObject({ param: 'bogus', code: 'unknown_parameter' });
    const badRole = await post({ model: 'gpt-4o', messages: [{ role: 'robot', content: 'x' }] });
    expect(badRole.status).toBe(400);
    const noAuth = await post(req('x'), { 'content-type': 'application/json' });
    expect(noAuth.status).toBe(401);
    expect((await errOf(noAuth)).type).toBe('invalid_request_error');
  });

  it('[sim:tool] with tools answers tool_calls; tool_choice none suppresses it, required forces it', async () => {
    const c = (await (await post(req('find it [sim:tool]', { tools: TOOLS }))).json()) as Completion;
    expect(c.choices[0]?.finish_reason).toBe('tool_calls');
    expect(c.choices[0]?.message.content).toBeNull();
    const call = c.choices[0]?.message.tool_calls?.[0];
    expect(call).toMatchObject({ type: 'function', function: { name: 'lookup', arguments: '{}' } });
    expect(call?.id).toMatch(/^call_/);
    const none = (await (await post(req('x [sim:tool]', { tools: TOOLS, tool_choice: 'none' }))).json()) as Completion;
    expect(none.choices[0]?.finish_reason).toBe('stop');
    const required = (await (await post(req('plain', { tools: TOOLS, tool_choice: 'required' }))).json()) as Completion;
    expect(required.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it('max_tokens / max_completion_tokens give finish_reason length; stop cuts the text', async () => {
    const a = (await (await post(req('a long long prompt', { max_tokens: 2 }))).json()) as Completion;
    expect(a.choices[0]).toMatchObject({ finish_reason: 'length', message: { content: 'Echo: a ' } });
    expect(a.usage.completion_tokens).toBe(2);
    const b = (await (await post(req('a long long prompt', { max_completion_tokens: 3 }))).json()) as Completion;
    expect(b.choices[0]).toMatchObject({ finish_reason: 'length', message: { content: 'Echo: a long' } });
    const c = (await (await post(req('a long long prompt', { max_completion_tokens: 100 }))).json()) as Completion;
    expect(c.choices[0]?.finish_reason).toBe('stop');
    const d = (await (await post(req('one two three', { stop: ['two'] }))).json()) as Completion;
    expect(d.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'Echo: one ' } });
  });
});

describe('POST /v1/chat/completions (streamed)', () => {
  it('role chunk, several content chunks, finish chunk, usage chunk, [DONE]', async () => {
    const res = await post(req('hello streaming world', { stream: true, stream_options: { include_usage: true } }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const items = parseData(await res.text());
    expect(items.at(-1)).toBe('[DONE]');
    const chunks = items.slice(0, -1) as Chunk[];
    for (const c of chunks) expect(c).toMatchObject({ object: 'chat.completion.chunk', model: 'gpt-4o-mini', id: chunks[0]?.id });
    expect(chunks[0]?.choices[0]?.delta).toMatchObject({ role: 'assistant', content: '' });
    const content = chunks.slice(1, -2);
    expect(content.length).toBeGreaterThanOrEqual(3);
    for (const c of content) expect(c.choices[0]?.finish_reason).toBeNull();
    expect(content.map((c) => c.choices[0]?.delta.content).join('')).toBe('Echo: hello streaming world');
    expect(chunks.at(-2)?.choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }]);
    const usage = chunks.at(-1);
    expect(usage?.choices).toEqual([]);
    expect(usage?.usage).toEqual({ prompt_tokens: 6, completion_tokens: 7, total_tokens: 13 });
  });

  it('without include_usage there is no usage chunk', async () => {
    const items = parseData(await (await post(req('short one', { stream: true }))).text());
    const chunks = items.slice(0, -1) as Chunk[];
    expect(chunks.every((c) => c.choices.length === 1 && c.usage === undefined)).toBe(true);
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('stop');
  });

  it('streams tool_calls with argument pieces and finish_reason tool_calls', async () => {
    const items = parseData(await (await post(req('go [sim:tool]', { stream: true, tools: TOOLS }))).text());
    const chunks = items.slice(0, -1) as Chunk[];
    expect(chunks[1]?.choices[0]?.delta.tool_calls?.[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'lookup', arguments: '' } });
    const args = chunks
      .slice(2, -1)
      .map((c) => c.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '')
      .join('');
    expect(args).toBe('{}');
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it('finish_reason length in a stream', async () => {
    const items = parseData(await (await post(req('a long long prompt', { stream: true, max_tokens: 2 }))).text());
    expect((items.at(-2) as Chunk).choices[0]?.finish_reason).toBe('length');
  });
});

describe('fault markers', () => {
  it.each([
    [429, 'requests'],
    [500, 'server_error'],
    [529, 'server_error'],
  ])('[sim:%i] answers that status (%s) before any byte', async (status, type) => {
    for (const stream of [false, true]) {
      const res = await post(req(`boom [sim:${status}]`, { stream }));
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
      expect((await errOf(res)).type).toBe(type);
    }
  });

  it('[sim:submit-5xx=N] counts attempts of the same prompt', async () => {
    const p = uniq('[sim:submit-5xx=2]');
    const statuses: number[] = [];
    for (let i = 0; i < 3; i += 1) statuses.push((await post(req(p))).status);
    expect(statuses).toEqual([500, 503, 200]);
  });

  it('[sim:slow=MS] delays the first byte; [sim:delay=MS] spaces chunks', async () => {
    let t0 = Date.now();
    const res = await post(req('slow [sim:slow=200]'));
    expect(Date.now() - t0).toBeGreaterThanOrEqual(190);
    expect(res.status).toBe(200);
    t0 = Date.now();
    const items = parseData(await (await post(req('spaced out [sim:delay=20]', { stream: true }))).text());
    expect(Date.now() - t0).toBeGreaterThanOrEqual(20 * (items.length - 1) - 5);
  });

  it('[sim:midstream-error] sends some chunks then a data error line, without [DONE]', async () => {
    const items = parseData(await (await post(req('a fairly long prompt for many chunks [sim:midstream-error]', { stream: true }))).text());
    expect(items).not.toContain('[DONE]');
    const last = items.at(-1) as Chunk;
    expect(last.error).toMatchObject({ type: 'server_error' });
    expect((items[0] as Chunk).choices[0]?.delta.role).toBe('assistant');
    expect((items[1] as Chunk).choices[0]?.delta.content).toEqual(expect.any(String));
  });

  it('[sim:hang] sends the first chunk then nothing until the client aborts', async () => {
    const ac = new AbortController();
    const res = await post(req('wait [sim:hang]', { stream: true }), HEADERS, { signal: ac.signal });
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first.startsWith('data: {')).toBe(true);
    expect(first).toContain('"role":"assistant"');
    const next = await Promise.race([reader.read().then(() => 'data'), new Promise((r) => setTimeout(() => r('timeout'), 300))]);
    expect(next).toBe('timeout');
    ac.abort();
    await expect(reader.read()).rejects.toThrow();
    expect((await post(req('after hang'))).status).toBe(200);
  });

  it('stats count chat requests and tokens', async () => {
    const local = await startSimulator({ jobMs: 10 });
    try {
      await fetch(`${local.url}/v1/chat/completions`, { method: 'POST', headers: HEADERS, body: JSON.stringify(req('abcd')) });
      const st = (await (await fetch(`${local.url}/_sim/stats`)).json()) as { requests: Record<string, number>; text: unknown };
      expect(st.requests['openai.chat.completions']).toBe(1);
      expect(st.text).toEqual({ requests: 1, inputTokens: 1, outputTokens: 3 });
    } finally {
      await local.close();
    }
  });
});

describe('official openai SDK against the simulator', () => {
  it('chat.completions.create non-streamed and streamed with include_usage', async () => {
    const client = new OpenAI({ apiKey: 'sk-sdk', baseURL: `${sim.url}/v1`, maxRetries: 0 });
    const c = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi sdk' }] });
    expect(c.choices[0]?.message.content).toBe('Echo: hi sdk');
    expect(c.usage?.total_tokens).toBeGreaterThan(0);

    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'stream via sdk' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('Echo: stream via sdk');
    expect(finish).toBe('stop');
    expect(usage).toEqual({ prompt_tokens: 4, completion_tokens: 5, total_tokens: 9 });

    const tool = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'x [sim:tool]' }],
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } } }],
    });
    expect(tool.choices[0]?.message.tool_calls?.[0]).toMatchObject({ type: 'function', function: { name: 'lookup' } });

    await expect(client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x [sim:429]' }] })).rejects.toMatchObject({
      status: 429,
    });
    const failing = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'a long prompt [sim:midstream-error]' }],
      stream: true,
    });
    await expect(
      (async () => {
        for await (const chunk of failing) void chunk;
      })(),
    ).rejects.toThrow();
  });
});
