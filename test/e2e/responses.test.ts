/**
 * POST /v1/responses through the official openai SDK, against two `openai-responses` channels
 * on the simulator (primary, then backup): plain and streamed answers (the exact event order,
 * the gateway's own ids in every event), reasoning items, function calls, continuing a response,
 * retrieve and delete by the owner only, billing from the reported usage exactly once, failover
 * before the first byte, a client that leaves a stream, and the refusals.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { DEFAULT_PRICES, textUsagePrice } from '../../src/billing/prices';
import { balanceOf } from '../support/billing';
import { e2eEnv, startGateway, type Gateway } from '../support/stack';
import { nonce, readSse, simPieces, simTokens, usageOf, usageRowFor } from '../support/text';
import { messageEventTypes } from '../support/responses';

let gw: Gateway;
let keyId: string;
let openai: OpenAI;
let other: OpenAI;
let tmpDir: string;

const PRO = 'o3-pro';
const MINI = 'gpt-4o-mini';
const TOOLS: OpenAI.Responses.Tool[] = [
  { type: 'function', name: 'lookup', description: 'Look up', parameters: { type: 'object', properties: {} }, strict: false },
];
const QUOTA = 50_000_000;
const IDLE_MS = 1500;

beforeAll(async () => {
  const { simulatorUrl } = e2eEnv();
  tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'responses-'));
  const file = path.join(tmpDir, 'channels.yaml');
  const ch = (name: string, priority: number) =>
    `  - name: ${name}\n    type: openai-responses\n    base_url: ${simulatorUrl}/v1\n    api_key: sim-key\n    models: [${PRO}, ${MINI}]\n    priority: ${priority}\n`;
  fs.writeFileSync(file, `channels:\n${ch('resp-primary', 10)}${ch('resp-backup', 0)}`);
  gw = await startGateway({ noWorker: true, env: { CHANNELS_FILE: file, CHANNEL_FAILURE_THRESHOLD: '100', TEXT_STREAM_IDLE_MS: String(IDLE_MS) } });
  const issued = await gw.issueKeyWithId('responses', { quota: QUOTA });
  keyId = issued.id;
  openai = new OpenAI({ apiKey: issued.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  other = new OpenAI({ apiKey: await gw.issueKey('responses-other'), baseURL: `${gw.url}/v1`, maxRetries: 0 });
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true });
}, 120_000);

const GATEWAY_ID = /^resp_[0-9a-f]{48}$/;

/** The simulator does not know the gateway's ids: proof that the client never got the upstream's. */
async function simulatorKnows(id: string): Promise<boolean> {
  const res = await fetch(`${gw.simulatorUrl}/v1/responses/${id}`, { headers: { authorization: 'Bearer sim-key' } });
  return res.status === 200;
}

describe('plain responses', () => {
  test('the echo, output_text and usage, under a gateway id; retrieve gives the same object', async () => {
    const prompt = `Hello responses ${nonce()}`;
    const r = await openai.responses.create({ model: MINI, input: prompt, instructions: 'Be terse.' });
    expect(r.id).toMatch(GATEWAY_ID);
    expect(await simulatorKnows(r.id)).toBe(false);
    expect(r).toMatchObject({ object: 'response', status: 'completed', model: MINI });
    expect(r.output_text).toBe(`Echo: ${prompt}`);
    const input = simTokens(prompt.length + 'Be terse.'.length);
    const output = simTokens(`Echo: ${prompt}`.length);
    expect(r.usage).toMatchObject({ input_tokens: input, output_tokens: output, total_tokens: input + output });
    const again = await openai.responses.retrieve(r.id);
    expect(again.id).toBe(r.id);
    expect(again.output_text).toBe(r.output_text);
    expect(again.usage).toEqual(r.usage);
  });

  test("a response the provider made carries the gateway's x-gateway-overhead-ms; a retrieve, which asks no provider, does not", async () => {
    const created = await openai.responses.create({ model: MINI, input: `overhead ${nonce()}` }).withResponse();
    expect(created.response.headers.get('x-gateway-overhead-ms')).toMatch(/^\d+\.\d{2}$/);
    const retrieved = await openai.responses.retrieve(created.data.id).withResponse();
    expect(retrieved.response.headers.get('x-gateway-overhead-ms')).toBeNull();
  });

  test('a reasoning model answers a reasoning item before its message; reasoning tokens are output tokens', async () => {
    const r = await openai.responses.create({
      model: PRO,
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'think it over' }] }],
      reasoning: { summary: 'auto' },
    });
    expect(r.output.map((i) => i.type)).toEqual(['reasoning', 'message']);
    const reasoning = r.usage!.output_tokens_details.reasoning_tokens;
    expect(reasoning).toBeGreaterThan(0);
    expect(r.usage!.output_tokens).toBe(reasoning + simTokens('Echo: think it over'.length));
  });

  test('function tools: a function_call item, and its output continues the response (previous_response_id mapped to the upstream)', async () => {
    const r = await openai.responses.create({ model: MINI, input: `find it ${nonce()} [sim:tool]`, tools: TOOLS });
    expect(r.output).toHaveLength(1);
    const call = r.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ type: 'function_call', name: 'lookup', arguments: '{}' });
    const next = await openai.responses.create({
      model: MINI,
      previous_response_id: r.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: '42' }],
      tools: TOOLS,
    });
    expect(next.id).toMatch(GATEWAY_ID);
    expect(next.previous_response_id).toBe(r.id);
    expect(next.status).toBe('completed');
  });

  test('another key sees none of it (404); the owner deletes it, then it is gone', async () => {
    const r = await openai.responses.create({ model: MINI, input: 'mine only' });
    await expect(other.responses.retrieve(r.id)).rejects.toMatchObject({ status: 404 });
    await expect(other.responses.delete(r.id)).rejects.toMatchObject({ status: 404 });
    await expect(other.responses.cancel(r.id)).rejects.toMatchObject({ status: 404 });
    await expect(other.responses.create({ model: MINI, input: 'x', previous_response_id: r.id })).rejects.toMatchObject({ status: 400 });
    const res = await fetch(`${gw.url}/v1/responses/${r.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${openai.apiKey}` } });
    expect(await res.json()).toEqual({ id: r.id, object: 'response', deleted: true });
    await expect(openai.responses.retrieve(r.id)).rejects.toMatchObject({ status: 404 });
    await expect(openai.responses.delete(r.id)).rejects.toMatchObject({ status: 404 });
  });

  test('store: false is answered but not kept', async () => {
    const r = await openai.responses.create({ model: MINI, input: 'forget me', store: false });
    expect(r.output_text).toBe('Echo: forget me');
    await expect(openai.responses.retrieve(r.id)).rejects.toMatchObject({ status: 404 });
  });

  test('refusals in the OpenAI error shape', async () => {
    const bad = await fetch(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${openai.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MINI, input: 'x', bogus: true }),
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      error: { message: expect.stringContaining('bogus'), type: 'invalid_request_error', param: 'bogus', code: 'unknown_parameter' },
    });
    await expect(openai.responses.create({ model: 'no-such-model', input: 'x' })).rejects.toMatchObject({ status: 400, code: 'model_not_found' });
    await expect(openai.responses.create({ model: 'cm-sonnet-4.5', input: 'x' })).rejects.toMatchObject({ status: 400, code: 'model_not_supported' });
    await expect(openai.responses.create({ model: MINI })).rejects.toMatchObject({ status: 400, param: 'input' });
    await expect(openai.responses.create({ model: MINI, input: 'x', previous_response_id: 'resp_unknown' })).rejects.toMatchObject({
      status: 400,
      code: 'previous_response_not_found',
    });
    await expect(
      openai.responses.create({ model: MINI, input: 'x', callback_url: 'https://example.com/hook' } as OpenAI.Responses.ResponseCreateParamsNonStreaming),
    ).rejects.toMatchObject({
      status: 400,
      param: 'callback_url',
    });
    const plain = await openai.responses.create({ model: MINI, input: 'x' });
    const badResume = await fetch(`${gw.url}/v1/responses/${plain.id}?stream=true&starting_after=-1`, {
      headers: { authorization: `Bearer ${openai.apiKey}` },
    });
    expect(badResume.status).toBe(400);
    expect(((await badResume.json()) as { error: { param: string } }).error.param).toBe('starting_after');
    await expect(openai.responses.cancel(plain.id)).rejects.toMatchObject({ status: 400, code: 'not_cancellable' });
    // The responses-only models are refused on chat completions, with the way here.
    await expect(openai.chat.completions.create({ model: PRO, messages: [{ role: 'user', content: 'x' }] })).rejects.toThrow(
      /POST \/v1\/responses of this gateway/,
    );
  });
});

describe('streamed responses', () => {
  test('the exact event order, numbered, every Response under the gateway id; retrieve gives the final object', async () => {
    const prompt = `Stream the responses ${nonce()}`;
    const text = `Echo: ${prompt}`;
    const stream = await openai.responses.create({ model: MINI, input: prompt, stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of stream) events.push(e);
    const deltas = simPieces(text);
    expect(events.map((e) => e.type)).toEqual(messageEventTypes(deltas));
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const ids = new Set(events.flatMap((e) => ('response' in e ? [e.response.id] : [])));
    expect(ids.size).toBe(1);
    const [id] = [...ids] as [string];
    expect(id).toMatch(GATEWAY_ID);
    expect(await simulatorKnows(id)).toBe(false);
    expect(events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])).join('')).toBe(text);
    const completed = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(completed.response.usage?.output_tokens).toBe(simTokens(text.length));
    const stored = await openai.responses.retrieve(id);
    expect(stored).toMatchObject({ id, status: 'completed', usage: completed.response.usage });
    expect(stored.output_text).toBe(text);
  });

  test('reasoning summaries and function-call arguments stream with their own events', async () => {
    const stream = await openai.responses.create({ model: PRO, input: `go ${nonce()} [sim:tool]`, tools: TOOLS, reasoning: { summary: 'auto' }, stream: true });
    const types: string[] = [];
    for await (const e of stream) types.push(e.type);
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.reasoning_summary_part.added']);
    expect(types).toContain('response.reasoning_summary_text.delta');
    expect(types.filter((t) => t === 'response.output_item.done')).toHaveLength(2);
    expect(types.slice(-3)).toEqual(['response.function_call_arguments.done', 'response.output_item.done', 'response.completed']);
  });

  test('a stream that breaks off mid-way ends with the error event the upstream sent; no response.completed', async () => {
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${openai.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MINI, input: `broken ${nonce()} [sim:midstream-error]`, stream: true }),
    });
    const frames = await readSse(res);
    expect(frames[0]?.event).toBe('response.created');
    expect(frames.at(-1)?.event).toBe('error');
    expect(frames.some((f) => f.event === 'response.completed')).toBe(false);
  });

  test(`an upstream that goes quiet is ended after TEXT_STREAM_IDLE_MS=${IDLE_MS} with an error event; usage outcome failed`, async () => {
    const requestId = `req-resp-idle-${nonce()}`;
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${openai.apiKey}`, 'content-type': 'application/json', 'x-request-id': requestId },
      body: JSON.stringify({ model: MINI, input: `go quiet ${nonce()} [sim:hang]`, stream: true }),
    });
    const frames = await readSse(res);
    expect(frames.map((f) => f.event)).toEqual(['response.created', 'error']);
    expect(JSON.parse(frames[1]!.data)).toEqual({
      type: 'error',
      code: 'upstream_stream_broken',
      message: expect.stringMatching(/sent nothing/),
      param: null,
      sequence_number: 1,
    });
    expect(await usageRowFor(gw.url, keyId, requestId)).toMatchObject({ outcome: 'failed', endpoint: 'responses' });
  });

  test('a client that leaves after the first event: the upstream is aborted and the request recorded as aborted', async () => {
    const requestId = `req-resp-leave-${nonce()}`;
    const stream = await openai.responses.create(
      { model: MINI, input: `hold on ${nonce()} [sim:hang]`, stream: true },
      { headers: { 'x-request-id': requestId } },
    );
    const seen: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of stream) {
      seen.push(e);
      stream.controller.abort();
    }
    expect(seen.map((e) => e.type)).toEqual(['response.created']);
    const row = await usageRowFor(gw.url, keyId, requestId);
    expect(row).toMatchObject({ streamed: true, endpoint: 'responses', model: MINI, outcome: 'aborted' });
    // Recorded as it was when the client left; a read asks its channel for how it is now.
    const id = (seen[0] as OpenAI.Responses.ResponseCreatedEvent).response.id;
    expect(id).toMatch(GATEWAY_ID);
    const now = await openai.responses.retrieve(id);
    expect(now).toMatchObject({ id, model: MINI, status: 'completed' });
    const next = await openai.responses.create({ model: MINI, input: 'still serving' });
    expect(next.output_text).toBe('Echo: still serving');
  });
});

describe('billing and failover', () => {
  test('the key pays the reported usage at the model price, once, on the channel that answered', async () => {
    const requestId = `req-resp-bill-${nonce()}`;
    const before = await balanceOf(gw.url, keyId);
    const r = await openai.responses.create({ model: PRO, input: `bill me ${nonce()}` }, { headers: { 'x-request-id': requestId } });
    const row = await usageRowFor(gw.url, keyId, requestId);
    const usage = r.usage!;
    expect(row).toMatchObject({
      endpoint: 'responses',
      model: PRO,
      outcome: 'completed',
      channel: 'resp-primary',
      input_tokens: usage.input_tokens,
      output_tokens: usage.output_tokens,
    });
    const price = textUsagePrice(DEFAULT_PRICES, PRO, {
      inputTokens: usage.input_tokens,
      outputTokens: usage.output_tokens,
      cacheCreationTokens: 0,
      cacheReadTokens: 0,
    });
    expect(price).toBeGreaterThan(0);
    expect(before! - (await balanceOf(gw.url, keyId))!).toBe(price);
    expect((await usageOf(gw.url, keyId)).recent.filter((u) => u.request_id === requestId)).toHaveLength(1);
  });

  test('a channel answering 5xx before the first byte: the backup answers, the client never sees the failure', async () => {
    const requestId = `req-resp-failover-${nonce()}`;
    const stream = await openai.responses.create(
      { model: MINI, input: `flaky ${nonce()} [sim:submit-5xx=1]`, stream: true },
      { headers: { 'x-request-id': requestId } },
    );
    const types: string[] = [];
    for await (const e of stream) types.push(e.type);
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    const row = await usageRowFor(gw.url, keyId, requestId);
    expect(row).toMatchObject({ channel: 'resp-backup', outcome: 'completed', streamed: true });
  });

  test('a continued response goes to the channel that holds the one it continues', async () => {
    const first = await openai.responses.create({ model: MINI, input: `first ${nonce()} [sim:submit-5xx=1]` });
    const firstRow = (await usageOf(gw.url, keyId)).recent.find((u) => u.model === MINI && u.channel === 'resp-backup');
    expect(firstRow).toBeDefined();
    const requestId = `req-resp-pinned-${nonce()}`;
    const next = await openai.responses.create({ model: MINI, input: 'and then', previous_response_id: first.id }, { headers: { 'x-request-id': requestId } });
    expect(next.previous_response_id).toBe(first.id);
    expect((await usageRowFor(gw.url, keyId, requestId)).channel).toBe('resp-backup');
  });
});

describe('out of the box (no CHANNELS_FILE): the simulated openai-responses channel', () => {
  let demo: Gateway;
  beforeAll(async () => {
    demo = await startGateway({ noWorker: true });
  }, 120_000);
  afterAll(async () => {
    await demo?.stop();
  }, 120_000);

  test('serves the responses-only models, plain and streamed', async () => {
    const client = new OpenAI({ apiKey: await demo.issueKey('demo'), baseURL: `${demo.url}/v1`, maxRetries: 0 });
    const r = await client.responses.create({ model: 'o3-deep-research', input: 'out of the box' });
    expect(r.output_text).toBe('Echo: out of the box');
    expect(r.output[0]?.type).toBe('reasoning');
    const types: string[] = [];
    for await (const e of await client.responses.create({ model: 'gpt-5-pro', input: 'streamed', stream: true })) types.push(e.type);
    expect(types.at(-1)).toBe('response.completed');
  });

  test('GET /v1/models names /v1/responses as where the responses models are called', async () => {
    const client = new OpenAI({ apiKey: await demo.issueKey('demo-models'), baseURL: `${demo.url}/v1`, maxRetries: 0 });
    const models = new Map<string, unknown>();
    for await (const m of client.models.list()) models.set(m.id, (m as unknown as { endpoints: string[] }).endpoints);
    expect(models.get('o3-pro')).toEqual(['/v1/responses']);
    expect(models.get('gpt-4o-mini')).toEqual(['/v1/chat/completions', '/v1/responses']);
    expect(models.get('cm-sonnet-4.5')).toEqual(['/v1/messages']);
  });
});
