/**
 * Billing on the embedded store (`npm start`'s process: PGlite, in-process worker and
 * in-process rate limits): the same exactness as on PostgreSQL (billing.test.ts) for the
 * concurrent-create race, the failed-task refund, a restart mid-task and the SDKs' 402/429; and
 * text answers whose usage was only in the journal when the gateway was SIGKILLed. Text holds
 * here come from leases (billing/text-leases.ts): a text race on a small quota and a SIGKILL
 * mid-answer bill exactly as hold rows do.
 * The run's teardown audits this store with `npm run audit:ledger`'s program.
 */
import fs from 'node:fs';
import path from 'node:path';
import Anthropic, { PaymentRequiredError, RateLimitError } from '@anthropic-ai/sdk';
import { DEFAULT_PRICES, videoTaskPrice } from '../../src/billing/prices';
import { auditMismatches, balanceOf, taskEntries } from '../support/billing';
import { call, createTask, queryTask, waitForTerminal } from '../support/client';
import { waitFor } from '../support/ports';
import { usageOf } from '../support/text';
import { runNode, TEST_DATA, type Child } from '../support/processes';
import { ADMIN_TOKEN, e2eEnv, embeddedEnv } from '../support/stack';

const FAST = videoTaskPrice(DEFAULT_PRICES, { model: 'vidgen3-fast' });
const dataDir = path.join(TEST_DATA, 'billing-embedded');
let env: Record<string, string>;
let main: Child | null = null;
let base: string;
let run = 0;

async function startMain(): Promise<void> {
  const logName = `billing-embedded-${++run}`;
  main = runNode('dist/src/main.js', env, logName);
  const logFile = path.join(TEST_DATA, `${logName}.log`);
  await waitFor('banner', async () => fs.existsSync(logFile) && fs.readFileSync(logFile, 'utf8').includes('Try it:'), 90_000, 200);
}

async function issue(limits: Record<string, number>): Promise<{ id: string; key: string }> {
  const res = await call<{ id: string; key: string }>(`${base}/admin/keys`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    json: { name: 'embedded', ...limits },
  });
  expect(res.status).toBe(201);
  return res.body;
}

beforeAll(async () => {
  fs.rmSync(dataDir, { recursive: true, force: true });
  env = await embeddedEnv(dataDir, { ADMIN_TOKEN, SIMULATOR_URL: e2eEnv().simulatorUrl, DATABASE_URL: '', REDIS_URL: '' });
  base = `http://127.0.0.1:${env.PORT}`;
  await startMain();
}, 120_000);

afterAll(async () => {
  if (main) expect(await auditMismatches(base)).toEqual([]);
  await main?.stop(20_000);
}, 120_000);

test('50 concurrent creates on a quota for 5: exactly 5 accepted, 45 get 402, balance exactly 0', async () => {
  const { id, key } = await issue({ quota: 5 * FAST });
  const results = await Promise.all(
    Array.from({ length: 50 }, (_, i) =>
      call<{ id: string }>(`${base}/v1/video/create`, { key, json: { model: 'vidgen3-fast', prompt: `embedded race ${i} [sim:ms=300]` } }),
    ),
  );
  expect(results.filter((r) => r.status === 200)).toHaveLength(5);
  expect(results.filter((r) => r.status === 402)).toHaveLength(45);
  expect(await balanceOf(base, id)).toBe(0);
  for (const r of results.filter((x) => x.status === 200)) expect((await waitForTerminal(base, key, r.body.id)).final.status).toBe('completed');
  expect(await balanceOf(base, id)).toBe(0);
});

test('a task whose upstream job fails: balance restored exactly', async () => {
  const { id, key } = await issue({ quota: FAST });
  const task = await createTask(base, key, { model: 'vidgen3-fast', prompt: 'embedded doom [sim:fail] [sim:ms=300]' });
  expect(await balanceOf(base, id)).toBe(0);
  expect((await waitForTerminal(base, key, task.id)).final.status).toBe('failed');
  expect(await balanceOf(base, id)).toBe(FAST);
  expect(await taskEntries(base, id, task.id)).toEqual([`charge:${-FAST}`, `refund:${FAST}`]);
});

test('402 and 429 through the Anthropic SDK (in-process rate limit)', async () => {
  const broke = await issue({ quota: 0 });
  const client = new Anthropic({ apiKey: broke.key, baseURL: base, maxRetries: 0 });
  const ask = () => client.messages.create({ model: 'cm-haiku-4.5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
  await expect(ask()).rejects.toBeInstanceOf(PaymentRequiredError);
  const limited = await issue({ rate_limit_rpm: 1 });
  const limitedClient = new Anthropic({ apiKey: limited.key, baseURL: base, maxRetries: 0 });
  await limitedClient.messages.create({ model: 'cm-haiku-4.5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
  await expect(limitedClient.messages.create({ model: 'cm-haiku-4.5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })).rejects.toBeInstanceOf(
    RateLimitError,
  );
});

test('a restart mid-task: the task completes after it, charged exactly once', async () => {
  const { id, key } = await issue({ quota: 2 * FAST });
  const task = await createTask(base, key, { model: 'vidgen3-fast', prompt: 'embedded restart [sim:ms=4000]' });
  await waitFor('processing', async () => (await queryTask(base, key, task.id)).body.status === 'processing', 20_000);
  expect(await main!.stop(20_000)).toBe(0);
  await startMain();
  expect((await waitForTerminal(base, key, task.id, 90_000)).final.status).toBe('completed');
  expect(await taskEntries(base, id, task.id)).toEqual([`charge:${-FAST}`]);
  expect(await balanceOf(base, id)).toBe(FAST);
});

test('a SIGKILL after text answers, before their usage batch: the next start bills them at their real price from the journal', async () => {
  const { id, key } = await issue({ quota: 1_000_000 });
  // No batch by time: the answers' usage is in the journal only when the process dies.
  expect(await main!.stop(20_000)).toBe(0);
  env.TEXT_USAGE_FLUSH_MS = '600000';
  await startMain();
  const client = new Anthropic({ apiKey: key, baseURL: base, maxRetries: 0 });
  const ids = [`req-embedded-journal-a-${Date.now()}`, `req-embedded-journal-b-${Date.now()}`];
  await client.messages.create(
    { model: 'cm-haiku-4.5', max_tokens: 8, messages: [{ role: 'user', content: 'plain' }] },
    { headers: { 'x-request-id': ids[0]! } },
  );
  await client.messages
    .stream({ model: 'cm-haiku-4.5', max_tokens: 8, messages: [{ role: 'user', content: 'streamed' }] }, { headers: { 'x-request-id': ids[1]! } })
    .finalMessage();
  const journal = path.join(dataDir, 'text-usage');
  const journaled = fs
    .readdirSync(journal)
    .map((f) => fs.readFileSync(path.join(journal, f), 'utf8'))
    .join('');
  for (const requestId of ids) expect(journaled).toContain(requestId);

  await main!.kill();
  delete env.TEXT_USAGE_FLUSH_MS;
  await startMain();
  const rows = (await usageOf(base, id)).recent.filter((r) => ids.includes(r.request_id));
  expect(rows.map((r) => r.outcome)).toEqual(['completed', 'completed']);
  const view = await call<{ balance: number; spent: number; held: number }>(`${base}/admin/keys/${id}`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  expect(view.body.spent).toBeGreaterThan(0);
  expect(view.body).toMatchObject({ balance: 1_000_000 - view.body.spent });
});

/** The key as the admin API shows it: what the views read once this process gave back what it does not use. */
async function keyView(id: string) {
  const res = await call<{ balance: number; spent: number; held: number; text_in_flight: number }>(`${base}/admin/keys/${id}`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  return res.body;
}

test('40 text requests racing on a quota for about 5 of their worst cases: every one over it gets 402, the balance never goes below 0 and ends exact', async () => {
  // What one request can cost at most: the 402 of a key with 1 credit says it.
  const probe = await issue({ quota: 1 });
  const refused = await fetch(`${base}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': probe.key, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'cm-haiku-4.5', max_tokens: 2000, messages: [{ role: 'user', content: 'race' }] }),
  });
  expect(refused.status).toBe(402);
  const ceiling = Number(/can cost up to (\d+) credits/.exec(((await refused.json()) as { error: { message: string } }).error.message)?.[1]);
  expect(ceiling).toBeGreaterThan(0);

  const quota = Math.floor(5.5 * ceiling);
  const { id, key } = await issue({ quota });
  // Each answer takes 300 ms: the 40 are in flight together.
  const statuses = await Promise.all(
    Array.from({ length: 40 }, async (_, i) => {
      const res = await fetch(`${base}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'cm-haiku-4.5',
          max_tokens: 2000,
          stream: i % 2 === 0,
          messages: [{ role: 'user', content: `race ${i} [sim:slow=300]` }],
        }),
      });
      await res.arrayBuffer();
      return res.status;
    }),
  );
  expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(5);
  expect(statuses.filter((s) => s === 402).length).toBeGreaterThan(0);
  expect(statuses.every((s) => s === 200 || s === 402)).toBe(true);
  const view = await keyView(id);
  expect(view).toMatchObject({ balance: quota - view.spent, held: 0, text_in_flight: 0 });
  expect(view.balance).toBeGreaterThanOrEqual(0);
  expect((await usageOf(base, id)).recent).toHaveLength(statuses.filter((s) => s === 200).length);
});

test('a SIGKILL mid-answer: the next start bills the request it was answering in full, and sets nothing aside for it any more', async () => {
  const { id, key } = await issue({ quota: 1_000_000 });
  const res = await fetch(`${base}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'cm-haiku-4.5', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'cut short [sim:hang]' }] }),
  });
  expect(res.status).toBe(200);
  expect((await keyView(id)).text_in_flight).toBe(1);
  await main!.kill();
  await res.text().catch(() => undefined);
  await startMain();
  const rows = (await usageOf(base, id)).recent;
  expect(rows).toHaveLength(1);
  expect(rows[0]).toMatchObject({ outcome: 'orphaned', model: 'cm-haiku-4.5', streamed: true });
  const view = await keyView(id);
  expect(view.spent).toBeGreaterThan(0);
  expect(view).toMatchObject({ balance: 1_000_000 - view.spent, held: 0, text_in_flight: 0 });
});
