/**
 * An answered text request's settlement is durable before the answer ends, in its API process's
 * local journal, and reaches the store in batches (TEXT_USAGE_FLUSH_MS). Through the real API
 * and the official SDKs, on PostgreSQL with API processes sharing a data folder: an API process
 * killed after its answers, before its batch was written, has them billed at their real price by
 * the process that finds it dead (before its holds are settled in full); and a key is never
 * refused for settlements still on their way to the store. The embedded store's restart after a
 * SIGKILL: billing-embedded.test.ts.
 */
import Anthropic, { APIError as AnthropicAPIError } from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import pg from 'pg';
import { ADMIN_TOKEN, startGateway, type Gateway } from '../support/stack';
import { waitFor } from '../support/ports';
import { nonce } from '../support/text';

let gw: Gateway;
let db: pg.Client;
const HAIKU = 'cm-haiku-4.5';
const MINI = 'gpt-4o-mini';
const user = (content: string) => [{ role: 'user' as const, content }];
/** Longer than any test: a batch is written only when something asks for it. */
const NEVER_BY_TIME = { TEXT_USAGE_FLUSH_MS: '600000' };

beforeAll(async () => {
  gw = await startGateway({ noWorker: true, env: { TEXT_HOLD_ORPHAN_SECONDS: '3' } });
  db = new pg.Client({ connectionString: gw.databaseUrl });
  await db.connect();
}, 120_000);

afterAll(async () => {
  await db?.end();
  await gw?.stop();
});

async function admin<T>(method: string, path: string): Promise<T> {
  const res = await fetch(`${gw.url}${path}`, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  return (await res.json()) as T;
}

async function stored(keyId: string, requestIds: string[]) {
  const { rows } = await db.query<{ request_id: string; outcome: string; price: string }>(
    'select request_id, outcome, price from usage_records where key_id = $1 and request_id = any($2::text[]) order by request_id',
    [keyId, requestIds],
  );
  const [key] = (await db.query<{ held: string; text_in_flight: number }>('select held, text_in_flight from api_keys where id = $1', [keyId])).rows;
  return { rows, held: Number(key?.held), inFlight: key?.text_in_flight };
}

test('answers of an API process killed before its batch was written are billed at their real price once it is found dead', async () => {
  const { id, key } = await gw.issueKeyWithId('journal', { quota: 1_000_000 });
  const replica = await gw.startApiReplica(NEVER_BY_TIME);
  const anthropic = new Anthropic({ apiKey: key, baseURL: replica, maxRetries: 0 });
  const openai = new OpenAI({ apiKey: key, baseURL: `${replica}/v1`, maxRetries: 0 });
  const ids = ['a', 'b', 'c'].map((n) => `req-journal-${n}-${nonce()}`);
  await anthropic.messages.create({ model: HAIKU, max_tokens: 20, messages: user('plain') }, { headers: { 'x-request-id': ids[0]! } });
  await anthropic.messages.stream({ model: HAIKU, max_tokens: 20, messages: user('streamed') }, { headers: { 'x-request-id': ids[1]! } }).finalMessage();
  const chat = await openai.chat.completions.create(
    { model: MINI, max_tokens: 20, stream: true, stream_options: { include_usage: true }, messages: user('chat streamed') },
    { headers: { 'x-request-id': ids[2]! } },
  );
  for await (const chunk of chat) void chunk;

  // The clients have their answers; the store has none of them yet, only the journal does.
  const before = await stored(id, ids);
  expect(before.rows).toEqual([]);
  expect(before.held).toBeGreaterThan(0);
  expect(before.inFlight).toBe(3);

  await gw.killApiReplica(replica);

  // Once its heartbeat is TEXT_HOLD_ORPHAN_SECONDS old, the other process on the folder writes
  // its journal before it settles the holds left: billed as answered, not in full as orphans.
  await waitFor('the dead process found', async () => (await stored(id, ids)).held === 0, 20_000, 250).catch(() => undefined);
  const after = await stored(id, ids);
  expect(after.rows.map((r) => r.outcome)).toEqual(['completed', 'completed', 'completed']);
  expect(after.held).toBe(0);
  expect(after.inFlight).toBe(0);
  const spent = after.rows.reduce((sum, r) => sum + Number(r.price), 0);
  expect(spent).toBeGreaterThan(0);
  const view = await admin<{ balance: number; spent: number }>('GET', `/admin/keys/${id}`);
  expect(view).toMatchObject({ balance: 1_000_000 - spent, spent });
  expect((await admin<{ mismatches: unknown[] }>('GET', '/admin/audit')).mismatches).toEqual([]);
});

test('a key is never refused for settlements still on their way to the store', async () => {
  const replica = await gw.startApiReplica(NEVER_BY_TIME);
  const ask = (key: string, n: number) =>
    new Anthropic({ apiKey: key, baseURL: replica, maxRetries: 0 }).messages.create({ model: HAIKU, max_tokens: 20, messages: user(`one at a time ${n}`) });

  // One text request in flight at most: back to back, each finds the one before it still held
  // until its settlement is written.
  const capped = await gw.issueKeyWithId('one-in-flight', { quota: 1_000_000 });
  const patched = await fetch(`${gw.url}/admin/keys/${capped.id}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ max_text_in_flight: 1 }),
  });
  expect(patched.status).toBe(200);
  for (let n = 0; n < 4; n++) await expect(ask(capped.key, n)).resolves.toMatchObject({ type: 'message' });

  // A balance for one hold and a half: the second request fits only once the first is billed
  // at its real price and its hold released.
  const probe = await gw.issueKeyWithId('probe', { quota: 1 });
  const refusal = await ask(probe.key, 0).catch((err: unknown) => err);
  expect(refusal).toBeInstanceOf(AnthropicAPIError);
  const hold = Number(/can cost up to (\d+) credits/.exec((refusal as AnthropicAPIError).message)?.[1]);
  expect(hold).toBeGreaterThan(0);
  const tight = await gw.issueKeyWithId('tight', { quota: Math.floor(hold * 1.5) });
  await expect(ask(tight.key, 0)).resolves.toMatchObject({ type: 'message' });
  await expect(ask(tight.key, 1)).resolves.toMatchObject({ type: 'message' });
});
