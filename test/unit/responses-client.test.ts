/**
 * The Responses API client against the simulator over real HTTP: every call, and how it
 * classifies failures (retryable: 429, 5xx, network; rejected: other 4xx).
 */
import type { TextChannel } from '../../src/config/channels';
import { upstreamFailure } from '../support/upstream-failure';
import { responsesClient } from '../../src/providers/openai-responses/client';
import { SseSplitter } from '../../src/providers/sse-events';
import { startSimulator, type RunningSimulator } from '../../simulator/server';
import { simResponsesChannel } from '../support/responses';

let sim: RunningSimulator;
let channel: TextChannel;
const timeouts = { requestMs: 5000, pollMs: 5000 };

beforeAll(async () => {
  sim = await startSimulator({ jobMs: 100 });
  channel = simResponsesChannel(sim.url);
});
afterAll(async () => {
  await sim.close();
});

test('create, retrieve and delete', async () => {
  const client = responsesClient(channel, timeouts);
  const r = await client.create({ model: 'o3-pro', input: 'hello' });
  expect(r).toMatchObject({ object: 'response', status: 'completed', model: 'o3-pro' });
  expect(r.usage?.output_tokens).toBeGreaterThan(0);
  expect((await client.retrieve(r.id)).id).toBe(r.id);
  expect(await client.delete(r.id)).toBe(true);
  expect(await upstreamFailure(client.retrieve(r.id))).toMatchObject({ kind: 'rejected', status: 404 });
});

test('a background create, polled to its end; a long one cancelled', async () => {
  const client = responsesClient(channel, timeouts);
  const r = await client.create({ model: 'o3-pro', input: 'bg [sim:ms=200]', background: true }, { idempotencyKey: 'bg-1' });
  expect(r.status).toBe('queued');
  let now = r;
  while (now.status === 'queued' || now.status === 'in_progress') now = await client.retrieve(r.id);
  expect(now.status).toBe('completed');
  const long = await client.create({ model: 'o3-pro', input: 'long [sim:ms=600000]', background: true });
  expect((await client.cancel(long.id)).status).toBe('cancelled');
});

test('createStream: the raw event stream, ending with response.completed', async () => {
  const res = await responsesClient(channel, timeouts).createStream({ model: 'o3-pro', input: 'stream it' }, new AbortController().signal);
  const types: string[] = [];
  const splitter = new SseSplitter();
  for await (const chunk of res) splitter.push(chunk as Buffer, (e) => types.push(e.name ?? ''));
  expect(types[0]).toBe('response.created');
  expect(types.at(-1)).toBe('response.completed');
});

test('failures: 429 and 5xx retryable, other 4xx rejected, no connection retryable', async () => {
  const client = responsesClient(channel, timeouts);
  expect(await upstreamFailure(client.create({ model: 'o3-pro', input: 'x [sim:429]' }))).toMatchObject({ kind: 'retryable', status: 429, retryAfterMs: 1000 });
  expect(await upstreamFailure(client.create({ model: 'o3-pro', input: 'x [sim:503]' }))).toMatchObject({ kind: 'retryable', status: 503 });
  expect(await upstreamFailure(client.createStream({ model: 'o3-pro', input: 'x [sim:500]' }, new AbortController().signal))).toMatchObject({
    kind: 'retryable',
    status: 500,
  });
  expect(await upstreamFailure(client.create({ model: 'o3-pro', input: 'x', bogus: 1 }))).toMatchObject({ kind: 'rejected', status: 400 });
  expect(await upstreamFailure(client.cancel('resp_nope'))).toMatchObject({ kind: 'rejected', status: 404 });
  const dead = responsesClient({ ...channel, baseUrl: 'http://127.0.0.1:1/v1' }, timeouts);
  expect(await upstreamFailure(dead.retrieve('resp_x'))).toMatchObject({ kind: 'retryable' });
  expect(await upstreamFailure(dead.createStream({ model: 'o3-pro', input: 'x' }, new AbortController().signal))).toMatchObject({ kind: 'retryable' });
});
