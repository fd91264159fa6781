/**
 * The simulator's Responses API over real HTTP, called with the official `openai` SDK (so its
 * shapes and its event stream are what the SDK reads), plus raw fetches for the wire details.
 */
import OpenAI from 'openai';
import { startSimulator, type RunningSimulator } from '../../simulator/server';
import { messageEventTypes } from '../support/responses';

let sim: RunningSimulator;
let client: OpenAI;
beforeAll(async () => {
  sim = await startSimulator({ jobMs: 100 });
  client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
});
afterAll(async () => {
  await sim.close();
});

let seq = 0;
const uniq = (text: string) => `${text} #${(seq += 1)}`;
const TOOLS: OpenAI.Responses.Tool[] = [
  { type: 'function', name: 'lookup', description: 'Look up', parameters: { type: 'object', properties: {} }, strict: false },
];

async function untilDone(id: string): Promise<OpenAI.Responses.Response> {
  for (;;) {
    const r = await client.responses.retrieve(id);
    if (r.status !== 'queued' && r.status !== 'in_progress') return r;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('POST /v1/responses (plain)', () => {
  it('echoes the input as a message item with deterministic usage, and stores it', async () => {
    const r = await client.responses.create({ model: 'gpt-4o-mini', input: 'hello there', instructions: 'be brief' });
    expect(r.id).toMatch(/^resp_[0-9a-f]{48}$/);
    expect(r).toMatchObject({ object: 'response', status: 'completed', model: 'gpt-4o-mini', background: false, instructions: 'be brief' });
    expect(r.output_text).toBe('Echo: hello there');
    expect(r.output).toHaveLength(1);
    expect(r.output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'completed' });
    const input = Math.ceil(('hello there'.length + 'be brief'.length) / 4);
    const output = Math.ceil('Echo: hello there'.length / 4);
    expect(r.usage).toEqual({
      input_tokens: input,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: output,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: input + output,
    });
    const again = await client.responses.retrieve(r.id);
    expect(again.output_text).toBe('Echo: hello there');
    expect(again.usage).toEqual(r.usage);
  });

  it('reasoning models (and any request with `reasoning`) add a reasoning item whose tokens are output tokens', async () => {
    const r = await client.responses.create({
      model: 'o3-pro',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'think hard' }] }],
      reasoning: { summary: 'auto' },
    });
    expect(r.output.map((i) => i.type)).toEqual(['reasoning', 'message']);
    const reasoning = r.output[0] as OpenAI.Responses.ResponseReasoningItem;
    expect(reasoning.summary[0]?.text).toContain('think hard');
    const thinking = 8 + Math.ceil('think hard'.length / 4);
    expect(r.usage?.output_tokens_details.reasoning_tokens).toBe(thinking);
    expect(r.usage?.output_tokens).toBe(thinking + Math.ceil('Echo: think hard'.length / 4));
    const plain = await client.responses.create({ model: 'gpt-4o', input: 'x', reasoning: { effort: 'low' } });
    expect(plain.output.map((i) => i.type)).toEqual(['reasoning', 'message']);
    expect((plain.output[0] as OpenAI.Responses.ResponseReasoningItem).summary).toEqual([]);
  });

  it('function tools: [sim:tool] or a forcing tool_choice answer a function_call item; none suppresses it', async () => {
    const r = await client.responses.create({ model: 'gpt-4o', input: 'find it [sim:tool]', tools: TOOLS });
    expect(r.output).toHaveLength(1);
    expect(r.output[0]).toMatchObject({ type: 'function_call', name: 'lookup', arguments: '{}', status: 'completed' });
    expect((r.output[0] as OpenAI.Responses.ResponseFunctionToolCall).call_id).toMatch(/^call_/);
    const forced = await client.responses.create({ model: 'gpt-4o', input: 'plain', tools: TOOLS, tool_choice: { type: 'function', name: 'lookup' } });
    expect(forced.output[0]?.type).toBe('function_call');
    const none = await client.responses.create({ model: 'gpt-4o', input: 'x [sim:tool]', tools: TOOLS, tool_choice: 'none' });
    expect(none.output[0]?.type).toBe('message');
    // The tool's result comes back as a function_call_output item, continuing the response.
    const next = await client.responses.create({
      model: 'gpt-4o',
      previous_response_id: r.id,
      input: [{ type: 'function_call_output', call_id: (r.output[0] as OpenAI.Responses.ResponseFunctionToolCall).call_id, output: '42' }],
    });
    expect(next.previous_response_id).toBe(r.id);
  });

  it('max_output_tokens cuts the answer: status incomplete', async () => {
    const r = await client.responses.create({
      model: 'gpt-4o',
      input: 'a long long prompt that goes on and on and on and on and on and on and on and on',
      max_output_tokens: 16,
    });
    expect(r.status).toBe('incomplete');
    expect(r.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(r.output_text).toHaveLength(64);
  });

  it('validates the body in the OpenAI error shape', async () => {
    const post = (body: unknown) =>
      fetch(`${sim.url}/v1/responses`, {
        method: 'POST',
        headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const unknown = await post({ model: 'gpt-4o', input: 'x', bogus: 1 });
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toEqual({
      error: { message: 'Unrecognized request argument supplied: bogus', type: 'invalid_request_error', param: 'bogus', code: 'unknown_parameter' },
    });
    expect((await post({ input: 'x' })).status).toBe(400);
    expect((await post({ model: 'gpt-4o' })).status).toBe(400);
    const prev = await post({ model: 'gpt-4o', input: 'x', previous_response_id: 'resp_nope' });
    expect(((await prev.json()) as { error: { code: string } }).error.code).toBe('previous_response_not_found');
    expect((await post({ model: 'sora-2', input: 'x' })).status).toBe(404);
    const noAuth = await fetch(`${sim.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(noAuth.status).toBe(401);
  });

  it('store: false is not retrievable; delete answers deleted and then 404', async () => {
    const unstored = await client.responses.create({ model: 'gpt-4o', input: 'x', store: false });
    await expect(client.responses.retrieve(unstored.id)).rejects.toMatchObject({ status: 404 });
    const r = await client.responses.create({ model: 'gpt-4o', input: 'x' });
    const res = await fetch(`${sim.url}/v1/responses/${r.id}`, { method: 'DELETE', headers: { authorization: 'Bearer k' } });
    expect(await res.json()).toEqual({ id: r.id, object: 'response', deleted: true });
    await expect(client.responses.retrieve(r.id)).rejects.toMatchObject({ status: 404 });
    await expect(client.responses.delete(r.id)).rejects.toMatchObject({ status: 404 });
  });

  it('cancel: a foreground response cannot be cancelled (400)', async () => {
    const r = await client.responses.create({ model: 'gpt-4o', input: 'x' });
    await expect(client.responses.cancel(r.id)).rejects.toMatchObject({ status: 400 });
  });
});

describe('POST /v1/responses (streamed)', () => {
  it('sends the full event sequence, numbered, ending with response.completed', async () => {
    const stream = await client.responses.create({ model: 'gpt-4o', input: 'hello streaming world', stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of stream) events.push(e);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const types = events.map((e) => e.type);
    const deltas = types.filter((t) => t === 'response.output_text.delta').length;
    expect(deltas).toBeGreaterThanOrEqual(3);
    expect(types).toEqual(messageEventTypes(deltas));
    const text = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])).join('');
    expect(text).toBe('Echo: hello streaming world');
    const created = events[0] as OpenAI.Responses.ResponseCreatedEvent;
    const completed = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(created.response).toMatchObject({ status: 'in_progress', output: [], usage: null });
    expect(completed.response.id).toBe(created.response.id);
    expect(completed.response.status).toBe('completed');
    expect(completed.response.usage?.output_tokens).toBe(Math.ceil(text.length / 4));
    expect((await client.responses.retrieve(created.response.id)).output_text).toBe(text);
  });

  it('streams reasoning summaries and function-call arguments with their own events', async () => {
    const stream = await client.responses.create({ model: 'o3-pro', input: 'go [sim:tool]', tools: TOOLS, reasoning: { summary: 'auto' }, stream: true });
    const types: string[] = [];
    for await (const e of stream) types.push(e.type);
    const summaryDeltas = types.filter((t) => t === 'response.reasoning_summary_text.delta').length;
    const argDeltas = types.filter((t) => t === 'response.function_call_arguments.delta').length;
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.reasoning_summary_part.added',
      ...Array<string>(summaryDeltas).fill('response.reasoning_summary_text.delta'),
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
      'response.output_item.done',
      'response.output_item.added',
      ...Array<string>(argDeltas).fill('response.function_call_arguments.delta'),
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
  });

  it('[sim:midstream-error] ends the stream with an error event and no response.completed', async () => {
    const res = await fetch(`${sim.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o', input: uniq('broken [sim:midstream-error]'), stream: true }),
    });
    const blocks = (await res.text()).split('\n\n').filter((b) => b.trim() !== '');
    expect(blocks[0]?.startsWith('event: response.created\n')).toBe(true);
    expect(blocks.at(-1)).toMatch(/^event: error\ndata: \{"type":"error","code":"server_error"/);
    expect(blocks.some((b) => b.startsWith('event: response.completed'))).toBe(false);
  });

  it('[sim:503] and [sim:submit-5xx=N] fail before any byte', async () => {
    await expect(client.responses.create({ model: 'gpt-4o', input: 'x [sim:503]', stream: true })).rejects.toMatchObject({ status: 503 });
    const input = uniq('flaky [sim:submit-5xx=1]');
    await expect(client.responses.create({ model: 'gpt-4o', input })).rejects.toMatchObject({ status: 500 });
    expect((await client.responses.create({ model: 'gpt-4o', input })).status).toBe('completed');
  });
});

describe('background responses', () => {
  it('answer queued at once, then complete on the clock with their output and usage', async () => {
    const r = await client.responses.create({ model: 'o3-deep-research', input: 'research [sim:ms=300]', background: true });
    expect(r.status).toBe('queued');
    expect(r.background).toBe(true);
    expect(r.output).toEqual([]);
    expect(r.usage).toBeNull();
    const done = await untilDone(r.id);
    expect(done.status).toBe('completed');
    expect(done.output_text).toBe('Echo: research [sim:ms=300]');
    expect(done.usage?.output_tokens_details.reasoning_tokens).toBeGreaterThan(0);
  });

  it('[sim:fail] ends failed; cancel makes a running one cancelled (and stays so)', async () => {
    const failed = await untilDone((await client.responses.create({ model: 'o3-pro', input: 'x [sim:fail][sim:ms=50]', background: true })).id);
    expect(failed.status).toBe('failed');
    expect(failed.error?.code).toBe('server_error');
    const long = await client.responses.create({ model: 'o3-pro', input: 'x [sim:ms=600000]', background: true });
    const cancelled = await client.responses.cancel(long.id);
    expect(cancelled.status).toBe('cancelled');
    expect((await client.responses.retrieve(long.id)).status).toBe('cancelled');
    expect((await client.responses.cancel(long.id)).status).toBe('cancelled');
  });

  it('needs store, and is not streamed by the simulator', async () => {
    await expect(client.responses.create({ model: 'o3-pro', input: 'x', background: true, store: false })).rejects.toMatchObject({ status: 400 });
    await expect(client.responses.create({ model: 'o3-pro', input: 'x', background: true, stream: true })).rejects.toMatchObject({ status: 400 });
  });

  it('a restarted simulator answers for the background responses of the one before, with the same usage', async () => {
    const first = await startSimulator({ jobMs: 100 });
    const a = new OpenAI({ baseURL: `${first.url}/v1`, apiKey: 'k', maxRetries: 0 });
    const r = await a.responses.create({ model: 'o3-pro', input: 'survive [sim:ms=200]', background: true });
    const expected = await (async () => {
      for (;;) {
        const x = await a.responses.retrieve(r.id);
        if (x.status === 'completed') return x;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    await first.close();
    const second = await startSimulator({ jobMs: 100 });
    try {
      const b = new OpenAI({ baseURL: `${second.url}/v1`, apiKey: 'k', maxRetries: 0 });
      const again = await b.responses.retrieve(r.id);
      expect(again.status).toBe('completed');
      expect(again.usage).toEqual(expected.usage);
      await expect(b.responses.retrieve(`${r.id.slice(0, -1)}${r.id.endsWith('0') ? '1' : '0'}`)).rejects.toMatchObject({ status: 404 });
    } finally {
      await second.close();
    }
  });
});
