/**
 * Background responses (POST /v1/responses with background: true) as durable runs, through the
 * official openai SDK against a real Temporal and the simulator: create / retrieve / cancel,
 * reads with no worker running, a worker killed and the whole gateway restarted mid-response,
 * failover of the create when the first channel answers 503, a failed response refunded, and
 * every response billed once: its hold released, its reported usage billed as one usage record.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import OpenAI from 'openai';
import { DEFAULT_PRICES, textUsagePrice } from '../../src/billing/prices';
import { balanceOf, ledgerOf } from '../support/billing';
import { e2eEnv, startGateway, type Gateway } from '../support/stack';
import { waitFor } from '../support/ports';
import { nonce } from '../support/text';
import { closedRunDescription } from '../support/runs';

let gw: Gateway;
let temporal: Client;
let connection: Connection;
let down: http.Server;
/** Creates the 503 channel refused. */
let downCreates = 0;
let tmpDir: string;

const PRO = 'o3-pro';
const QUOTA = 50_000_000;
const GATEWAY_ID = /^resp_[0-9a-f]{48}$/;

beforeAll(async () => {
  const { simulatorUrl, temporalAddress } = e2eEnv();
  // The first channel: every create answered 503 (the provider surely took nothing).
  down = http.createServer((req, res) => {
    if (req.method === 'POST') downCreates++;
    req.resume();
    res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'overloaded', type: 'server_error' } }));
  });
  await new Promise<void>((resolve) => down.listen(0, '127.0.0.1', resolve));
  const downUrl = `http://127.0.0.1:${(down.address() as AddressInfo).port}/v1`;
  tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'responses-bg-'));
  const file = path.join(tmpDir, 'channels.yaml');
  const ch = (name: string, url: string, priority: number, models: string) =>
    `  - name: ${name}\n    type: openai-responses\n    base_url: ${url}\n    api_key: sim-key\n    models: [${models}]\n    priority: ${priority}\n    submit_attempts: 2\n`;
  // o3-pro is served by the simulator alone; o3-deep-research by the 503 channel first, the simulator after it.
  fs.writeFileSync(file, `channels:\n${ch('bg-down', downUrl, 10, 'o3-deep-research')}${ch('bg-sim', `${simulatorUrl}/v1`, 0, `${PRO}, o3-deep-research`)}`);
  gw = await startGateway({ env: { CHANNELS_FILE: file, UPSTREAM_RETRY_INITIAL_MS: '100', UPSTREAM_RETRY_MAX_MS: '400' } });
  connection = await Connection.connect({ address: temporalAddress });
  temporal = new Client({ connection });
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await connection?.close();
  down?.close();
  if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true });
}, 120_000);

async function client(name: string): Promise<{ openai: OpenAI; keyId: string }> {
  const issued = await gw.issueKeyWithId(name, { quota: QUOTA });
  return { openai: new OpenAI({ apiKey: issued.key, baseURL: `${gw.url}/v1`, maxRetries: 0 }), keyId: issued.id };
}

/** Polls with the SDK until the response leaves queued / in_progress; the statuses seen on the way. */
async function settled(openai: OpenAI, id: string, timeoutMs = 60_000): Promise<{ response: OpenAI.Responses.Response; seen: string[] }> {
  const seen: string[] = [];
  let response: OpenAI.Responses.Response | undefined;
  await waitFor(
    `response ${id} finished`,
    async () => {
      response = await openai.responses.retrieve(id);
      if (response.status && seen[seen.length - 1] !== response.status) seen.push(response.status);
      return response.status !== 'queued' && response.status !== 'in_progress';
    },
    timeoutMs,
    150,
  );
  return { response: response!, seen };
}

/** A background response (its metadata tagged), once the provider is working on it. */
async function inProgress(openai: OpenAI, input: string, tag: string): Promise<OpenAI.Responses.Response> {
  const created = await openai.responses.create({ model: PRO, input, background: true, metadata: { tag } });
  await waitFor('in progress upstream', async () => (await openai.responses.retrieve(created.id)).status === 'in_progress', 20_000, 100);
  return created;
}

/** The simulator's responses tagged with this metadata tag: how many upstream responses the gateway made. */
async function upstreamResponses(tag: string): Promise<{ id: string; status: string }[]> {
  const res = await fetch(`${gw.simulatorUrl}/_sim/responses`);
  const list = (await res.json()) as { data: { id: string; status: string; metadata: Record<string, string> | null }[] };
  return list.data.filter((r) => r.metadata?.tag === tag);
}

/** Billed once: the hold charged and released by the same amount, and the reported usage billed as one usage record. */
async function expectBilledOnce(keyId: string, response: OpenAI.Responses.Response): Promise<void> {
  const usage = response.usage!;
  const cached = usage.input_tokens_details?.cached_tokens ?? 0;
  const price = textUsagePrice(DEFAULT_PRICES, response.model, {
    inputTokens: usage.input_tokens - cached,
    outputTokens: usage.output_tokens,
    cacheCreationTokens: 0,
    cacheReadTokens: cached,
  });
  expect(price).toBeGreaterThan(0);
  await waitFor('balance settled', async () => (await balanceOf(gw.url, keyId)) === QUOTA - price, 10_000, 100);
  const entries = await ledgerOf(gw.url, keyId);
  const charge = entries.filter((e) => e.kind === 'charge' && e.ref === response.id);
  const refund = entries.filter((e) => e.kind === 'refund' && e.ref === response.id);
  const used = entries.filter((e) => e.kind === 'usage');
  expect(charge).toHaveLength(1);
  expect(refund).toHaveLength(1);
  expect(refund[0]!.amount).toBe(-charge[0]!.amount);
  expect(used).toEqual([expect.objectContaining({ amount: -price })]);
}

test('create, retrieve until completed: queued first, the gateway id, the output, billed once, few history events, the same search attributes as a task', async () => {
  const { openai, keyId } = await client('bg-plain');
  const tag = nonce();
  const created = await openai.responses.create({ model: PRO, input: `Say hello [sim:ms=2500]`, background: true, metadata: { tag } });
  expect(created).toMatchObject({ object: 'response', status: 'queued', background: true, model: PRO, output: [] });
  expect(created.id).toMatch(GATEWAY_ID);
  const { response, seen } = await settled(openai, created.id);
  expect(seen).toContain('in_progress');
  expect(response).toMatchObject({ id: created.id, status: 'completed', model: PRO, background: true });
  expect(response.output_text).toContain('hello');
  expect(response.usage?.output_tokens).toBeGreaterThan(0);
  expect(await upstreamResponses(tag)).toHaveLength(1);
  await expectBilledOnce(keyId, response);

  const description = await closedRunDescription(temporal, created.id);
  expect(description.type).toBe('backgroundResponseWorkflow');
  expect(description.searchAttributes).toMatchObject({ GatewayOwner: [keyId], GatewayModel: [PRO], GatewayStatus: ['completed'] });
  // The history does not grow with the response's length: the watch is one step.
  const history = await temporal.workflow.getHandle(created.id).fetchHistory();
  expect(history.events?.length ?? 0).toBeLessThanOrEqual(30);
  process.stdout.write(`background response history: ${history.events?.length} events\n`);
}, 90_000);

test('cancel: the SDK gets it cancelled at once, the provider is told, the hold released in full; a cancel of a finished one answers it as it is', async () => {
  const { openai, keyId } = await client('bg-cancel');
  const tag = nonce();
  const created = await inProgress(openai, 'A long one [sim:ms=30000]', tag);
  const cancelled = await openai.responses.cancel(created.id);
  expect(cancelled).toMatchObject({ id: created.id, status: 'cancelled' });
  await waitFor('the provider cancelled it', async () => (await upstreamResponses(tag))[0]?.status === 'cancelled', 20_000, 100);
  await waitFor('hold released', async () => (await balanceOf(gw.url, keyId)) === QUOTA, 20_000, 100);
  expect((await openai.responses.retrieve(created.id)).status).toBe('cancelled');
  expect(await openai.responses.cancel(created.id)).toMatchObject({ status: 'cancelled' });
  await waitFor('run closed', async () => (await temporal.workflow.getHandle(created.id).describe()).status.name === 'COMPLETED', 20_000, 200);
  const entries = await ledgerOf(gw.url, keyId);
  expect(entries.filter((e) => e.kind === 'usage')).toHaveLength(0);
}, 90_000);

test('delete: a running one is stopped, its run deletes the provider copy and releases the hold; a finished one is deleted upstream at once', async () => {
  const { openai, keyId } = await client('bg-delete');
  const tag = nonce();
  const running = await inProgress(openai, 'Delete me [sim:ms=30000]', tag);
  await openai.responses.delete(running.id);
  await expect(openai.responses.retrieve(running.id)).rejects.toMatchObject({ status: 404 });
  await waitFor('run closed', async () => (await temporal.workflow.getHandle(running.id).describe()).status.name === 'COMPLETED', 20_000, 200);
  await waitFor('the provider copy deleted', async () => (await upstreamResponses(tag)).length === 0, 20_000, 100);
  await waitFor('hold released', async () => (await balanceOf(gw.url, keyId)) === QUOTA, 20_000, 100);

  const finishedTag = nonce();
  const finished = await openai.responses.create({ model: PRO, input: 'Then delete me [sim:ms=300]', background: true, metadata: { tag: finishedTag } });
  expect((await settled(openai, finished.id)).response.status).toBe('completed');
  expect(await upstreamResponses(finishedTag)).toHaveLength(1);
  await openai.responses.delete(finished.id);
  await expect(openai.responses.retrieve(finished.id)).rejects.toMatchObject({ status: 404 });
  await waitFor('the finished one deleted upstream', async () => (await upstreamResponses(finishedTag)).length === 0, 20_000, 100);
}, 90_000);

test('the worker killed mid-response and the gateway restarted: reads go on with no worker, the response completes, one upstream response, billed once', async () => {
  const { openai, keyId } = await client('bg-crash');
  const tag = nonce();
  const created = await inProgress(openai, 'Survive this [sim:ms=8000]', tag);
  await gw.killWorker();
  // No worker: the record answers reads.
  expect((await openai.responses.retrieve(created.id)).status).toBe('in_progress');
  await gw.restartApi();
  expect((await openai.responses.retrieve(created.id)).status).toBe('in_progress');
  await gw.startWorker();
  const { response } = await settled(openai, created.id, 90_000);
  expect(response.status).toBe('completed');
  expect(await upstreamResponses(tag)).toHaveLength(1);
  await expectBilledOnce(keyId, response);
}, 150_000);

test('a first channel answering 503 to every create: the response is made on the next channel, once', async () => {
  const { openai, keyId } = await client('bg-failover');
  const tag = nonce();
  const before = downCreates;
  const created = await openai.responses.create({ model: 'o3-deep-research', input: 'Research [sim:ms=1000]', background: true, metadata: { tag } });
  const { response } = await settled(openai, created.id);
  expect(response.status).toBe('completed');
  // Both attempts on the first channel (submit_attempts: 2), then the next one.
  expect(downCreates - before).toBe(2);
  expect(await upstreamResponses(tag)).toHaveLength(1);
  await expectBilledOnce(keyId, response);
}, 90_000);

test('a response the provider fails is failed for the client and refunded in full', async () => {
  const { openai, keyId } = await client('bg-fail');
  const created = await openai.responses.create({ model: PRO, input: 'Fail this [sim:ms=800][sim:fail]', background: true });
  const { response } = await settled(openai, created.id);
  expect(response.status).toBe('failed');
  expect(response.error).toEqual(expect.objectContaining({ message: expect.any(String) }));
  await waitFor('refunded', async () => (await balanceOf(gw.url, keyId)) === QUOTA, 20_000, 100);
}, 60_000);

test('streamed: the events in order from response.created to response.completed, numbered; a reader that reconnects with starting_after gets the rest', async () => {
  const { openai, keyId } = await client('bg-stream');
  const stream = await openai.responses.create({ model: PRO, input: 'Stream this [sim:ms=1500]', background: true, stream: true });
  const events: OpenAI.Responses.ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  expect(events.map((e) => e.sequence_number)).toEqual(events.map((_e, i) => i));
  expect(events.map((e) => e.type)).toEqual([
    'response.created',
    'response.queued',
    'response.in_progress',
    // o3-pro reasons first: its reasoning item (no summary asked for), then the message.
    'response.output_item.added',
    'response.output_item.done',
    'response.output_item.added',
    'response.content_part.added',
    'response.output_text.delta',
    'response.output_text.done',
    'response.content_part.done',
    'response.output_item.done',
    'response.completed',
  ]);
  const last = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
  const id = last.response.id;
  expect(id).toMatch(GATEWAY_ID);
  expect(last.response.status).toBe('completed');
  const delta = events.find((e) => e.type === 'response.output_text.delta') as OpenAI.Responses.ResponseTextDeltaEvent;
  expect(delta.delta).toContain('Stream this');
  await expectBilledOnce(keyId, await openai.responses.retrieve(id));

  // Resumed after the in_progress event: exactly the rest, numbered as before.
  const resumed = await openai.responses.retrieve(id, { stream: true, starting_after: 2 });
  const rest: OpenAI.Responses.ResponseStreamEvent[] = [];
  for await (const event of resumed) rest.push(event);
  expect(rest).toEqual(events.slice(3));
}, 60_000);

test('Idempotency-Key: a repeated create answers the same response, one upstream response, one hold; the key with another body is refused', async () => {
  const { openai, keyId } = await client('bg-idempotent');
  const tag = nonce();
  const key = `idem-${tag}`;
  const params = { model: PRO, input: `Once [sim:ms=800]`, background: true, metadata: { tag } } as const;
  const first = await openai.responses.create(params, { headers: { 'Idempotency-Key': key } }).withResponse();
  const again = await openai.responses.create(params, { headers: { 'Idempotency-Key': key } }).withResponse();
  expect(again.data.id).toBe(first.data.id);
  expect(first.response.headers.get('idempotent-replayed')).toBeNull();
  expect(again.response.headers.get('idempotent-replayed')).toBe('true');
  // The same request streamed is still a repeat: its events are the first response's.
  const streamed = await openai.responses.create({ ...params, stream: true }, { headers: { 'Idempotency-Key': key } });
  const streamedIds: string[] = [];
  for await (const event of streamed) if (event.type === 'response.created') streamedIds.push(event.response.id);
  expect(streamedIds).toEqual([first.data.id]);
  await expect(openai.responses.create({ ...params, input: 'Another request' }, { headers: { 'Idempotency-Key': key } })).rejects.toMatchObject({
    status: 422,
    code: 'idempotency_key_reused',
  });
  const { response } = await settled(openai, first.data.id);
  expect(response.status).toBe('completed');
  expect(await upstreamResponses(tag)).toHaveLength(1);
  await expectBilledOnce(keyId, response);
}, 60_000);

// (Video tasks share these slots: billing-store.test.ts; this gateway has no video channel.)
test("a background response holds one of the key's max_concurrent_tasks slots until it ends", async () => {
  const issued = await gw.issueKeyWithId('bg-slots', { quota: QUOTA, max_concurrent_tasks: 1 });
  const openai = new OpenAI({ apiKey: issued.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const running = await openai.responses.create({ model: PRO, input: 'Slow [sim:ms=1500]', background: true });
  await expect(openai.responses.create({ model: PRO, input: 'Second', background: true })).rejects.toMatchObject({ status: 429, code: 'too_many_tasks' });
  await settled(openai, running.id);
  // Its end freed the slot.
  await waitFor('slot freed', async () => {
    const billing = (await (await fetch(`${gw.url}/v1/billing`, { headers: { authorization: `Bearer ${issued.key}` } })).json()) as { tasks_in_flight: number };
    return billing.tasks_in_flight === 0;
  });
  const next = await openai.responses.create({ model: PRO, input: 'Next [sim:ms=300]', background: true });
  expect((await settled(openai, next.id)).response.status).toBe('completed');
}, 60_000);

test('refusals: another key cannot read or cancel it; store false; a hold the balance cannot cover', async () => {
  const { openai } = await client('bg-owner');
  const { openai: other } = await client('bg-other');
  const created = await openai.responses.create({ model: PRO, input: 'Mine [sim:ms=500]', background: true });
  await expect(other.responses.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
  await expect(other.responses.cancel(created.id)).rejects.toMatchObject({ status: 404 });
  await expect(openai.responses.create({ model: PRO, input: 'x', background: true, store: false })).rejects.toMatchObject({ status: 400, param: 'store' });
  const poor = await gw.issueKey('bg-poor', { quota: 10 });
  const poorClient = new OpenAI({ apiKey: poor, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  await expect(poorClient.responses.create({ model: PRO, input: 'x', background: true })).rejects.toMatchObject({ status: 402 });
  await settled(openai, created.id);
}, 60_000);
