/**
 * Idempotency-Key on every create (issue 17, item 4), on the real stack: the same key and
 * request answer the same task and charge once, however they arrive (in turn, at once, or as the
 * OpenAI SDK's own retry after a timeout); the same key with another request is a 422.
 */
import OpenAI from 'openai';
import { DEFAULT_PRICES, characterPrice, videoTaskPrice } from '../../src/billing/prices';
import { auditMismatches, ledgerOf } from '../support/billing';
import { call, waitForTerminal } from '../support/client';
import { startGateway, type Gateway } from '../support/stack';
import { nonce } from '../support/text';
import { slowClipServer } from '../support/clips';

const FAST = videoTaskPrice(DEFAULT_PRICES, { model: 'vidgen3-fast' });
const MOTION = videoTaskPrice(DEFAULT_PRICES, { model: 'motion-2', seconds: 10 });
const CHARACTER = characterPrice(DEFAULT_PRICES);

let gw: Gateway;
let clips: { base: string; close: () => void };

beforeAll(async () => {
  // A character clip that takes 2 s to arrive: a create that makes a character outlasts a short client timeout.
  clips = await slowClipServer(2000);
  gw = await startGateway();
}, 120_000);

afterAll(async () => {
  if (gw) expect(await auditMismatches(gw.url)).toEqual([]);
  await gw?.stop();
  clips?.close();
}, 120_000);

const create = (key: string, body: Record<string, unknown>, idempotencyKey?: string) =>
  call<{ id: string; error?: { code: string } }>(`${gw.url}/v1/video/create`, {
    key,
    json: body,
    headers: idempotencyKey ? { 'idempotency-key': idempotencyKey } : {},
  });

async function charges(keyId: string): Promise<string[]> {
  return (await ledgerOf(gw.url, keyId)).filter((e) => e.kind === 'charge').map((e) => e.ref);
}

async function simJobs(prompt: string): Promise<unknown[]> {
  return (await call<{ data: unknown[] }>(`${gw.simulatorUrl}/_sim/jobs?prompt=${encodeURIComponent(prompt)}`)).body.data;
}

test('the same key and body, in turn: the same task, charged once; another body: 422', async () => {
  const { id, key } = await gw.issueKeyWithId('in-turn', { quota: 10 * FAST });
  const body = { model: 'vidgen3-fast', prompt: `once only ${nonce()} [sim:ms=300]` };
  const first = await create(key, body, 'k-1');
  const second = await create(key, { prompt: body.prompt, model: body.model }, 'k-1');
  expect(first.status).toBe(200);
  expect(second.status).toBe(200);
  expect(second.body.id).toBe(first.body.id);
  expect(second.headers.get('idempotent-replayed')).toBe('true');
  const other = await create(key, { ...body, prompt: `${body.prompt} changed` }, 'k-1');
  expect(other.status).toBe(422);
  expect(other.body.error).toMatchObject({ code: 'idempotency_key_reused' });
  // The same key under another API key is another request.
  const stranger = await gw.issueKey('stranger', { quota: FAST });
  const theirs = await create(stranger, body, 'k-1');
  expect(theirs.status).toBe(200);
  expect(theirs.body.id).not.toBe(first.body.id);
  expect(await charges(id)).toEqual([first.body.id]);
  expect((await waitForTerminal(gw.url, key, first.body.id)).final.status).toBe('completed');
  expect(await simJobs(body.prompt)).toHaveLength(2); // this key's task and the stranger's
});

test('ten at once with the same key and body: one task, one charge', async () => {
  const { id, key } = await gw.issueKeyWithId('at-once', { quota: 10 * FAST });
  const prompt = `a burst of repeats ${nonce()} [sim:ms=300]`;
  const results = await Promise.all(Array.from({ length: 10 }, () => create(key, { model: 'vidgen3-fast', prompt }, 'burst')));
  for (const r of results) expect(r.status).toBe(200);
  expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
  expect(await charges(id)).toEqual([results[0]!.body.id]);
  await waitForTerminal(gw.url, key, results[0]!.body.id);
  expect(await simJobs(prompt)).toHaveLength(1);
});

test('a malformed Idempotency-Key is a 400; a refused create (402) frees the key for the same request later', async () => {
  const { id, key } = await gw.issueKeyWithId('refused', { quota: FAST - 1 });
  const body = { model: 'vidgen3-fast', prompt: `paid later ${nonce()} [sim:ms=300]` };
  expect((await create(key, body, 'x'.repeat(256))).status).toBe(400);
  expect((await create(key, body, 'later')).status).toBe(402);
  await fetch(`${gw.url}/admin/keys/${id}/quota`, {
    method: 'POST',
    headers: { authorization: 'Bearer test-admin-token', 'content-type': 'application/json' },
    body: JSON.stringify({ delta: 1 }),
  });
  const paid = await create(key, body, 'later');
  expect(paid.status).toBe(200);
  expect(await charges(id)).toEqual([paid.body.id]);
});

test('openai.videos.create retried by the SDK after a timeout makes one video and one character', async () => {
  const { id, key } = await gw.issueKeyWithId('sdk-retry', { quota: 10 * MOTION });
  const openai = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 3, timeout: 1000 });
  const prompt = `retried by the SDK ${nonce()} [sim:ms=300]`;
  const video = (await openai.videos.create(
    {
      model: 'motion-2',
      prompt,
      seconds: '10' as OpenAI.Videos.VideoCreateParams['seconds'],
      size: '720x1280',
      character_url: `${clips.base}/clip.mp4`,
      character_create: JSON.stringify({ save_to_library: true }),
    } as OpenAI.Videos.VideoCreateParams,
    { headers: { 'Idempotency-Key': `sdk-${nonce()}` } },
  )) as unknown as { id: string; character?: { id: string } };
  expect(video.id).toMatch(/^motion-2:/);
  expect(video.character?.id).toMatch(/^char_/);
  expect((await waitForTerminal(gw.url, key, video.id)).final.status).toBe('completed');
  const ledger = await ledgerOf(gw.url, id);
  expect(
    ledger
      .filter((e) => e.kind === 'charge')
      .map((e) => `${e.ref}:${e.amount}`)
      .sort(),
  ).toEqual([`${video.character!.id}:${-CHARACTER}`, `${video.id}:${-MOTION}`].sort());
  expect(ledger.filter((e) => e.kind === 'refund')).toEqual([]);
  expect(await simJobs(prompt)).toHaveLength(1);
});

test('remix, characters and video chat completions honour the key too', async () => {
  const { id, key } = await gw.issueKeyWithId('families', { quota: 20 * MOTION });
  const source = await create(key, { model: 'motion-2', prompt: `remix source ${nonce()} [sim:ms=300]`, images: [] }, 'src');
  expect(source.status).toBe(200);
  await waitForTerminal(gw.url, key, source.body.id);

  const remix = () =>
    call<{ id: string }>(`${gw.url}/v1/videos/${source.body.id}/remix`, {
      key,
      json: { prompt: 'at night [sim:ms=300]' },
      headers: { 'idempotency-key': 'remix' },
    });
  const [r1, r2] = [await remix(), await remix()];
  expect(r1.status).toBe(200);
  expect(r2.body.id).toBe(r1.body.id);

  const character = () =>
    call<{ id: string }>(`${gw.url}/motion/v1/characters`, { key, json: { from_task: source.body.id }, headers: { 'idempotency-key': 'character' } });
  const [c1, c2] = [await character(), await character()];
  expect(c1.status).toBe(200);
  expect(c2.body.id).toBe(c1.body.id);

  const chat = () =>
    call<{ choices: { message: { content: string } }[] }>(`${gw.url}/v1/chat/completions`, {
      key,
      json: { model: 'motion-2', messages: [{ role: 'user', content: 'a chat video [sim:ms=300]' }] },
      headers: { 'idempotency-key': 'chat' },
    });
  const [h1, h2] = [await chat(), await chat()];
  const taskOf = (content: string) => /task_id: (\S+)/.exec(content)?.[1];
  expect(taskOf(h1.body.choices[0]!.message.content)).toBeDefined();
  expect(taskOf(h2.body.choices[0]!.message.content)).toBe(taskOf(h1.body.choices[0]!.message.content));

  const refs = await charges(id);
  expect(refs.filter((r) => r === r1.body.id)).toHaveLength(1);
  expect(refs.filter((r) => r === c1.body.id)).toHaveLength(1);
  expect(refs.filter((r) => r === taskOf(h1.body.choices[0]!.message.content))).toHaveLength(1);
});
