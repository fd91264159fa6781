/**
 * Text spending is held, not hoped for (issue 17, items 1 and 2), through the real API and the
 * official SDKs: however many requests of a key run at once its balance never goes below zero;
 * a chat request that names no max_tokens is capped upstream; a key's text requests in flight
 * and its open streams are capped; a client that leaves pays for what was produced (never 0,
 * never input only); usage reaches the database moments after the answer; and the holds of an API process
 * killed mid-answer are settled in full by another.
 */
import Anthropic, { APIError as AnthropicAPIError } from '@anthropic-ai/sdk';
import OpenAI, { APIError as OpenAIAPIError, RateLimitError } from 'openai';
import pg from 'pg';
import { waitFor } from '../support/ports';
import { ADMIN_TOKEN, startGateway, type Gateway } from '../support/stack';
import { nonce, readSse, usageOf, usageRowFor } from '../support/text';

let gw: Gateway;
const HAIKU = 'cm-haiku-4.5';
const MINI = 'gpt-4o-mini';
const DEFAULT_CAP = 8;
const user = (content: string) => [{ role: 'user' as const, content }];

beforeAll(async () => {
  gw = await startGateway({
    noWorker: true,
    env: { TEXT_DEFAULT_MAX_TOKENS: String(DEFAULT_CAP), MAX_STREAMS_PER_KEY: '3', TEXT_HOLD_ORPHAN_SECONDS: '3' },
  });
}, 120_000);

afterAll(async () => {
  await gw?.stop();
});

async function admin(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${gw.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function keyView(id: string): Promise<{ balance: number | null; spent: number }> {
  return (await (await admin('GET', `/admin/keys/${id}`)).json()) as { balance: number | null; spent: number };
}

async function audit(): Promise<unknown[]> {
  return ((await (await admin('GET', '/admin/audit')).json()) as { mismatches: unknown[] }).mismatches;
}

test('100 parallel /v1/messages calls on a key holding 2,000 credits never take it below zero', async () => {
  const { id, key } = await gw.issueKeyWithId('small-balance', { quota: 2000 });
  const anthropic = new Anthropic({ apiKey: key, baseURL: gw.url, maxRetries: 0 });
  // Each answer costs about 40 credits and holds at most about 350 (haiku: $1.25/MTok for a cache
  // write, $5/MTok out): a few run at once, the others are refused, none overspends.
  const results = await Promise.allSettled(
    Array.from({ length: 100 }, (_, i) => anthropic.messages.create({ model: HAIKU, max_tokens: 20, messages: user(`spend a little ${i} ${nonce()}`) })),
  );
  const answered = results.filter((r) => r.status === 'fulfilled');
  expect(answered.length).toBeGreaterThan(0);
  for (const r of results) {
    if (r.status === 'rejected') {
      expect(r.reason).toBeInstanceOf(AnthropicAPIError);
      expect((r.reason as AnthropicAPIError).status).toBe(402);
      expect((r.reason as AnthropicAPIError).message).toMatch(/can cost up to \d+ credits/);
    }
  }
  const view = await keyView(id);
  expect(view.balance).toBeGreaterThanOrEqual(0);
  expect(view.spent).toBeLessThanOrEqual(2000);
  expect(view.balance! + view.spent).toBe(2000);
  expect((await usageOf(gw.url, id)).recent).toHaveLength(answered.length);
  expect(await audit()).toEqual([]);
});

test('parallel streamed chat completions that name no max_tokens are held at the default cap, which is sent upstream', async () => {
  const { id, key } = await gw.issueKeyWithId('chat-cap', { quota: 500 });
  const openai = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const results = await Promise.allSettled(
    Array.from({ length: 30 }, async (_, i) => {
      const stream = await openai.chat.completions.create({
        model: MINI,
        stream: true,
        messages: user(`a long answer please, longer than the cap ${i} ${nonce()}`),
      });
      let finish: string | null = null;
      for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish;
      return finish;
    }),
  );
  const answered = results.filter((r): r is PromiseFulfilledResult<string | null> => r.status === 'fulfilled');
  expect(answered.length).toBeGreaterThan(0);
  // The simulator echoes the prompt: cut by the cap the gateway sent.
  for (const r of answered) expect(r.value).toBe('length');
  // Refused for its balance (402), or for the key's three open streams (429).
  for (const r of results) if (r.status === 'rejected') expect([402, 429]).toContain((r.reason as OpenAIAPIError).status);
  const rows = (await usageOf(gw.url, id)).recent;
  for (const row of rows) expect(row.output_tokens).toBeLessThanOrEqual(DEFAULT_CAP);
  expect((await keyView(id)).balance).toBeGreaterThanOrEqual(0);
});

test("a key's text requests in flight are capped (admin-settable), with a 429 and Retry-After", async () => {
  const { id, key } = await gw.issueKeyWithId('in-flight');
  const patched = await admin('PATCH', `/admin/keys/${id}`, { max_text_in_flight: 2 });
  expect(((await patched.json()) as { max_text_in_flight: number }).max_text_in_flight).toBe(2);
  const openai = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const results = await Promise.allSettled(
    Array.from({ length: 5 }, (_, i) => openai.chat.completions.create({ model: MINI, max_tokens: 5, messages: user(`slow ${i} ${nonce()} [sim:slow=1500]`) })),
  );
  expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(2);
  for (const r of results) {
    if (r.status === 'fulfilled') continue;
    expect(r.reason).toBeInstanceOf(RateLimitError);
    expect((r.reason as RateLimitError).code).toBe('too_many_requests_in_flight');
    expect((r.reason as RateLimitError).headers?.get('retry-after')).toBe('1');
  }
  // Once they finished, the key may send again.
  await expect(openai.chat.completions.create({ model: MINI, max_tokens: 5, messages: user('after the burst') })).resolves.toBeDefined();
});

test("a key's open streams are capped per process", async () => {
  const key = await gw.issueKey('streams');
  const controllers = Array.from({ length: 3 }, () => new AbortController());
  const open = await Promise.all(
    controllers.map((c, i) =>
      fetch(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ model: HAIKU, max_tokens: 20, stream: true, messages: user(`hold ${i} ${nonce()} [sim:hang]`) }),
        signal: c.signal,
      }),
    ),
  );
  for (const res of open) expect(res.status).toBe(200);
  const fourth = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ model: HAIKU, max_tokens: 20, stream: true, messages: user(`one too many ${nonce()}`) }),
  });
  expect(fourth.status).toBe(429);
  expect(await fourth.json()).toMatchObject({ type: 'error', error: { type: 'rate_limit_error', message: expect.stringMatching(/3 streams open/) } });
  for (const c of controllers) c.abort();
  // The slots come back once the streams are gone.
  await new Promise((r) => setTimeout(r, 500));
  const again = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ model: HAIKU, max_tokens: 20, stream: true, messages: user(`room again ${nonce()}`) }),
  });
  expect(again.status).toBe(200);
  await again.text();
});

describe('a client that leaves pays for what was produced', () => {
  test('chat: a stream dropped after its first content chunks bills its input and the relayed output, not 0', async () => {
    const { id, key } = await gw.issueKeyWithId('drop-chat');
    const openai = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const requestId = `req-drop-chat-${nonce()}`;
    const stream = await openai.chat.completions.create(
      { model: MINI, max_tokens: 500, stream: true, messages: user(`tell me a story with many words in it ${nonce()} [sim:delay=300]`) },
      { headers: { 'x-request-id': requestId } },
    );
    let relayed = '';
    for await (const chunk of stream) {
      relayed += chunk.choices[0]?.delta.content ?? '';
      if (relayed.length > 10) stream.controller.abort();
    }
    const row = await usageRowFor(gw.url, id, requestId);
    expect(row.outcome).toBe('aborted');
    expect(row.input_tokens).toBeGreaterThan(0);
    expect(row.output_tokens).toBeGreaterThanOrEqual(Math.ceil(Buffer.byteLength(relayed) / 3));
    expect((await keyView(id)).spent).toBeGreaterThan(0);
  });

  test('messages: a stream dropped after some text deltas bills more than its input', async () => {
    const { id, key } = await gw.issueKeyWithId('drop-messages');
    const requestId = `req-drop-messages-${nonce()}`;
    const controller = new AbortController();
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json', 'x-request-id': requestId },
      body: JSON.stringify({
        model: HAIKU,
        max_tokens: 500,
        stream: true,
        messages: user(`a long story with very many words please ${nonce()} [sim:delay=300]`),
      }),
      signal: controller.signal,
    });
    let text = '';
    let deltas = 0;
    await readSse(res, (frame) => {
      if (frame.event !== 'content_block_delta') return false;
      text += (JSON.parse(frame.data) as { delta: { text?: string } }).delta.text ?? '';
      if (++deltas < 3) return false;
      controller.abort();
      return true;
    }).catch((err: unknown) => {
      if (!controller.signal.aborted) throw err;
    });
    const row = await usageRowFor(gw.url, id, requestId);
    expect(row.outcome).toBe('aborted');
    expect(row.input_tokens).toBeGreaterThan(0);
    expect(row.output_tokens).toBeGreaterThanOrEqual(Math.ceil(Buffer.byteLength(text) / 3));
    expect(row.output_tokens).toBeGreaterThan(1);
  });

  test('a non-streamed request whose client left runs to its answer, which is billed in full', async () => {
    const { id, key } = await gw.issueKeyWithId('drop-plain');
    const requestId = `req-drop-plain-${nonce()}`;
    const controller = new AbortController();
    const pending = fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json', 'x-request-id': requestId },
      body: JSON.stringify({ model: HAIKU, max_tokens: 100, messages: user(`worth paying for ${nonce()} [sim:slow=1500]`) }),
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 300);
    await expect(pending).rejects.toThrow();
    const row = await usageRowFor(gw.url, id, requestId);
    expect(row).toMatchObject({ outcome: 'aborted', streamed: false });
    expect(row.input_tokens).toBeGreaterThan(0);
    expect(row.output_tokens).toBeGreaterThan(1);
  });
});

test('usage reaches the database moments after the answer ends (one batch per TEXT_USAGE_FLUSH_MS)', async () => {
  const { id, key } = await gw.issueKeyWithId('durable-usage', { quota: 1_000_000 });
  const anthropic = new Anthropic({ apiKey: key, baseURL: gw.url, maxRetries: 0 });
  const db = new pg.Client({ connectionString: gw.databaseUrl });
  await db.connect();
  try {
    for (const stream of [false, true]) {
      const requestId = `req-durable-${stream}-${nonce()}`;
      if (stream)
        await anthropic.messages
          .stream({ model: HAIKU, max_tokens: 20, messages: user('streamed, then read at once') }, { headers: { 'x-request-id': requestId } })
          .finalMessage();
      else
        await anthropic.messages.create(
          { model: HAIKU, max_tokens: 20, messages: user('plain, then read at once') },
          { headers: { 'x-request-id': requestId } },
        );
      // Durable already (the journal: text-usage-journal.test.ts); in the store within a batch.
      const read = async () =>
        (
          await db.query<{ n: number; held: string }>(
            'select (select count(*)::int from usage_records where request_id = $1) as n, (select held from api_keys where id = $2) as held',
            [requestId, id],
          )
        ).rows[0];
      await waitFor('the usage batch', async () => (await read())?.n === 1, 2000, 10).catch(() => undefined);
      const row = await read();
      expect(row).toEqual({ n: 1, held: '0' });
    }
  } finally {
    await db.end();
  }
});

test('the holds of an API process killed mid-answer are settled in full by another, and the audit stays clean', async () => {
  const { id, key } = await gw.issueKeyWithId('orphan', { quota: 1_000_000 });
  const replica = await gw.startApiReplica();
  const res = await fetch(`${replica}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ model: HAIKU, max_tokens: 100, stream: true, messages: user(`cut short ${nonce()} [sim:hang]`) }),
  });
  expect(res.status).toBe(200);
  const held = (await (await admin('GET', `/admin/keys/${id}`)).json()) as { balance: number };
  expect(held.balance).toBe(1_000_000);
  await gw.killApiReplica(replica);
  await res.text().catch(() => undefined);
  // The first API process finds the dead one's hold within a few heartbeats.
  const deadline = Date.now() + 20_000;
  let rows = (await usageOf(gw.url, id)).recent;
  while (rows.length === 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    rows = (await usageOf(gw.url, id)).recent;
  }
  expect(rows).toHaveLength(1);
  expect(rows[0]).toMatchObject({ outcome: 'orphaned', model: HAIKU, streamed: true });
  const view = await keyView(id);
  expect(view.spent).toBeGreaterThan(0);
  expect(view.balance).toBe(1_000_000 - view.spent);
  expect(await audit()).toEqual([]);
});
