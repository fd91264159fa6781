/**
 * Billing, quotas and rate limits on the real stack with PostgreSQL (each gateway has its own
 * database; API and worker are separate processes): charges race exactly, failed tasks are
 * refunded exactly once, a worker killed at each step of a task never charges twice, the
 * SDKs see 402 and 429 as their own error classes, and two API replicas share one rate
 * limit through Redis. The embedded store runs the same scenarios in billing-embedded.test.ts.
 */
import { execSync } from 'node:child_process';
import Anthropic, { PaymentRequiredError, RateLimitError as AnthropicRateLimitError } from '@anthropic-ai/sdk';
import OpenAI, { APIError as OpenAiApiError, RateLimitError as OpenAiRateLimitError } from 'openai';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { DEFAULT_PRICES, videoTaskPrice, characterPrice, textUsagePrice } from '../../src/billing/prices';
import { textCeiling } from '../../src/billing/text-ceiling';
import { auditMismatches, balanceOf, ledgerOf, taskEntries } from '../support/billing';
import { call, createTask, queryTask, waitForTerminal } from '../support/client';
import { createTestDatabase } from '../support/services';
import { ADMIN_TOKEN, e2eEnv, startGateway, type Gateway } from '../support/stack';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';

const FAST = videoTaskPrice(DEFAULT_PRICES, { model: 'vidgen3-fast' });
const MOTION = videoTaskPrice(DEFAULT_PRICES, { model: 'motion-2', seconds: 10 });
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitForStatus(gw: Gateway, key: string, id: string, status: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if ((await queryTask(gw.url, key, id)).body.status === status) return;
    await sleep(100);
  }
  throw new Error(`task ${id} never became ${status}`);
}

describe('quota and ledger', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await startGateway();
  }, 120_000);
  afterAll(async () => {
    if (gw) expect(await auditMismatches(gw.url)).toEqual([]);
    await gw?.stop();
  }, 120_000);

  test('50 concurrent creates on a quota for 5 tasks: exactly 5 accepted, 45 get 402, balance exactly 0', async () => {
    const { id, key } = await gw.issueKeyWithId('five', { quota: 5 * FAST });
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        call<{ id?: string; error?: { code: string; type: string } }>(`${gw.url}/v1/video/create`, {
          key,
          json: { model: 'vidgen3-fast', prompt: `race ${i} [sim:ms=300]` },
        }),
      ),
    );
    const accepted = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 402);
    expect(accepted).toHaveLength(5);
    expect(refused).toHaveLength(45);
    for (const r of refused) expect(r.body.error).toMatchObject({ code: 'insufficient_quota', type: 'insufficient_quota' });
    expect(await balanceOf(gw.url, id)).toBe(0);
    // Nothing was started for a refused request: only the 5 accepted tasks exist.
    for (const r of accepted) expect((await waitForTerminal(gw.url, key, r.body.id!)).final.status).toBe('completed');
    const ledger = await ledgerOf(gw.url, id);
    expect(
      ledger
        .filter((e) => e.kind === 'charge')
        .map((e) => e.ref)
        .sort(),
    ).toEqual(accepted.map((r) => r.body.id).sort());
    expect(ledger.filter((e) => e.kind === 'refund')).toEqual([]);
    expect(await balanceOf(gw.url, id)).toBe(0);
    const own = await call<{ balance: number; spent: number; tasks_in_flight: number }>(`${gw.url}/v1/billing`, { key });
    expect(own.body).toMatchObject({ balance: 0, spent: 5 * FAST, tasks_in_flight: 0 });
  });

  test.each([
    ['fails at the provider', '[sim:fail]', 'upstream_failed'],
    ['is rejected by the provider', '[sim:reject]', 'upstream_rejected'],
  ])('a task whose upstream job %s: balance restored exactly, one charge and one refund', async (_what, marker, code) => {
    const { id, key } = await gw.issueKeyWithId('refund', { quota: FAST + 7 });
    const task = await createTask(gw.url, key, { model: 'vidgen3-fast', prompt: `doomed ${marker} [sim:ms=300]` });
    expect(await balanceOf(gw.url, id)).toBe(7);
    const { final } = await waitForTerminal(gw.url, key, task.id);
    expect(final.status).toBe('failed');
    expect(final.error?.code).toBe(code);
    // Refunded before "failed" shows: the first read of the status sees the balance back.
    expect(await balanceOf(gw.url, id)).toBe(FAST + 7);
    expect(await taskEntries(gw.url, id, task.id)).toEqual([`charge:${-FAST}`, `refund:${FAST}`]);
    const refund = (await ledgerOf(gw.url, id)).find((e) => e.kind === 'refund');
    expect(refund?.reason).toMatch(/^task failed: /);
  });

  test('remix and character tasks are priced and charged too', async () => {
    const quota = 2 * MOTION + characterPrice(DEFAULT_PRICES);
    const { id, key } = await gw.issueKeyWithId('motion', { quota });
    const source = await createTask(gw.url, key, { model: 'motion-2', prompt: 'source [sim:ms=300]', images: [] });
    await waitForTerminal(gw.url, key, source.id);
    const remix = await call<{ id: string }>(`${gw.url}/v1/videos/${encodeURIComponent(source.id)}/remix`, { key, json: { prompt: 'at night [sim:ms=300]' } });
    expect(remix.status).toBe(200);
    const character = await call<{ id: string }>(`${gw.url}/motion/v1/characters`, { key, json: { from_task: source.id, timestamps: '0,2' } });
    expect(character.status).toBe(200);
    await waitForTerminal(gw.url, key, remix.body.id);
    expect(await taskEntries(gw.url, id, remix.body.id)).toEqual([`charge:${-MOTION}`]);
    expect(await taskEntries(gw.url, id, character.body.id)).toEqual([`charge:${-characterPrice(DEFAULT_PRICES)}`]);
    expect(await balanceOf(gw.url, id)).toBe(0);
    // Nothing left: the next remix is refused with nothing started.
    const refused = await call<{ error: { code: string } }>(`${gw.url}/v1/videos/${encodeURIComponent(source.id)}/remix`, { key, json: { prompt: 'again' } });
    expect(refused.status).toBe(402);
  });

  test('a video that saves a character to the library is paid for before the character is made: 402 leaves nothing behind', async () => {
    const video = videoTaskPrice(DEFAULT_PRICES, { model: 'motion-2', seconds: 4, size: '480x480' });
    const character = characterPrice(DEFAULT_PRICES);
    const { id, key } = await gw.issueKeyWithId('saves', { quota: MOTION + video - 1 });
    const source = await createTask(gw.url, key, { model: 'motion-2', prompt: 'source [sim:ms=300]', images: [] });
    await waitForTerminal(gw.url, key, source.id);
    const create = async () => {
      const form = new FormData();
      const fields = {
        model: 'motion-2',
        prompt: 'me again [sim:ms=300]',
        seconds: '4',
        size: '480x480',
        character_from_task: source.id,
        character_timestamps: '0,2',
        character_create: '{"save_to_library":true}',
      };
      for (const [k, v] of Object.entries(fields)) form.set(k, v);
      const res = await fetch(`${gw.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
      return { status: res.status, body: (await res.json()) as { id?: string; character?: { id: string }; error?: { code: string } } };
    };
    const kinds = async () => (await ledgerOf(gw.url, id)).map((e) => `${e.kind}:${e.amount}`);

    // The video alone is short by one credit: refused before the character is made (no character charge).
    const short = await create();
    expect(short.status).toBe(402);
    expect(short.body.error?.code).toBe('insufficient_quota');
    expect(await balanceOf(gw.url, id)).toBe(video - 1);
    expect((await kinds()).filter((k) => !k.startsWith('grant'))).toEqual([`charge:${-MOTION}`]);

    // The video is paid for but the character is not: the video's charge is refunded at once.
    await call(`${gw.url}/admin/keys/${id}/quota`, { headers: admin, json: { delta: 1 } });
    const noCharacter = await create();
    expect(noCharacter.status).toBe(402);
    expect(await balanceOf(gw.url, id)).toBe(video);
    const refunded = (await ledgerOf(gw.url, id)).filter((e) => e.kind === 'refund');
    expect(refunded).toHaveLength(1);
    expect(refunded[0]).toMatchObject({ amount: video, reason: 'the request was refused before its task started' });
    expect(await taskEntries(gw.url, id, refunded[0]!.ref)).toEqual([`charge:${-video}`, `refund:${video}`]);

    // Enough for both: one charge each, and the video runs with the saved character.
    await call(`${gw.url}/admin/keys/${id}/quota`, { headers: admin, json: { delta: character } });
    const ok = await create();
    expect(ok.status).toBe(200);
    expect((await waitForTerminal(gw.url, key, ok.body.id!)).final.status).toBe('completed');
    expect(await taskEntries(gw.url, id, ok.body.id!)).toEqual([`charge:${-video}`]);
    expect(await taskEntries(gw.url, id, ok.body.character!.id)).toEqual([`charge:${-character}`]);
    expect(await balanceOf(gw.url, id)).toBe(0);
  });

  test('admin quota: add and remove credits, idempotent by Idempotency-Key, never below zero', async () => {
    const { id } = await gw.issueKeyWithId('topup', { quota: 100 });
    const add = (delta: number, headers: Record<string, string> = {}) =>
      call<{ balance: number; error?: { code: string } }>(`${gw.url}/admin/keys/${id}/quota`, {
        headers: { ...admin, ...headers },
        json: { delta, reason: 'test' },
      });
    expect((await add(50, { 'idempotency-key': 'invoice-1' })).body.balance).toBe(150);
    expect((await add(50, { 'idempotency-key': 'invoice-1' })).body.balance).toBe(150);
    expect((await add(-150)).body.balance).toBe(0);
    const tooMuch = await add(-1);
    expect(tooMuch.status).toBe(409);
    expect(tooMuch.body.error?.code).toBe('insufficient_balance');
    expect((await call(`${gw.url}/admin/keys/${id}/quota`, { headers: admin, json: { delta: 0 } })).status).toBe(400);
    expect((await call(`${gw.url}/admin/keys/key_nope/quota`, { headers: admin, json: { delta: 5 } })).status).toBe(404);
    const unlimited = await gw.issueKeyWithId('free');
    expect(
      (await call<{ error: { code: string } }>(`${gw.url}/admin/keys/${unlimited.id}/quota`, { headers: admin, json: { delta: 5 } })).body.error.code,
    ).toBe('key_unlimited');
    const ledger = await ledgerOf(gw.url, id);
    expect(ledger.map((e) => `${e.kind}:${e.amount}`)).toEqual(['grant:-150', 'grant:50', 'grant:100']);
    // Limits change after issue; null removes one.
    const patched = await call<{ rate_limit_rpm: number | null; max_concurrent_tasks: number | null }>(`${gw.url}/admin/keys/${id}`, {
      method: 'PATCH',
      headers: admin,
      json: { rate_limit_rpm: 30, max_concurrent_tasks: null },
    });
    expect(patched.body).toMatchObject({ rate_limit_rpm: 30, max_concurrent_tasks: null });
    expect((await call<{ rate_limit_rpm: number }>(`${gw.url}/admin/keys/${id}`, { headers: admin })).body.rate_limit_rpm).toBe(30);
  });

  test('402 through the official SDKs: PaymentRequiredError on messages, a 402 APIError on chat and videos', async () => {
    const { key } = await gw.issueKeyWithId('broke', { quota: 0 });
    const anthropic = new Anthropic({ apiKey: key, baseURL: gw.url, maxRetries: 0 });
    const err = await anthropic.messages
      .create({ model: 'cm-haiku-4.5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PaymentRequiredError);
    expect((err as PaymentRequiredError).error).toMatchObject({ type: 'error', error: { type: 'billing_error' } });
    const openai = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const chatErr = await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(chatErr).toBeInstanceOf(OpenAiApiError);
    expect(chatErr).toMatchObject({ status: 402, code: 'insufficient_quota', type: 'insufficient_quota' });
    const videoErr = await openai.videos.create({ model: 'motion-2', prompt: 'x', seconds: '4' as never, size: '480x480' as never }).catch((e: unknown) => e);
    expect(videoErr).toMatchObject({ status: 402, code: 'insufficient_quota' });
  });

  test('text is billed from the reported tokens, streamed or not, and an aborted stream bills what was reported', async () => {
    const { id, key } = await gw.issueKeyWithId('text', { quota: 10_000_000 });
    const anthropic = new Anthropic({ apiKey: key, baseURL: gw.url, maxRetries: 0 });
    const whole = await anthropic.messages.create({ model: 'cm-sonnet-4.5', max_tokens: 64, messages: [{ role: 'user', content: 'bill me once' }] });
    const stream = anthropic.messages.stream({ model: 'cm-haiku-4.5', max_tokens: 64, messages: [{ role: 'user', content: 'bill me streamed' }] });
    const streamed = await stream.finalMessage();
    // An aborted stream: the client leaves after the first text delta of a slow answer.
    const raw = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'cm-haiku-4.5',
        max_tokens: 64,
        stream: true,
        messages: [{ role: 'user', content: 'leave early please do [sim:delay=300]' }],
      }),
    });
    const reader = raw.body!.getReader();
    let text = '';
    while (!text.includes('content_block_delta')) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    await sleep(1500);
    const usage = await call<{
      recent: {
        model: string;
        outcome: string;
        input_tokens: number;
        output_tokens: number;
        cache_creation_tokens: number;
        cache_read_tokens: number;
        id: string;
      }[];
    }>(`${gw.url}/admin/keys/${id}/usage`, { headers: admin });
    const records = usage.body.recent;
    expect(records.map((r) => r.outcome).sort()).toEqual(['aborted', 'completed', 'completed']);
    const ledger = await ledgerOf(gw.url, id);
    for (const r of records) {
      const price = textUsagePrice(DEFAULT_PRICES, r.model, {
        inputTokens: r.input_tokens,
        outputTokens: r.output_tokens,
        cacheCreationTokens: r.cache_creation_tokens,
        cacheReadTokens: r.cache_read_tokens,
      });
      expect(ledger.find((e) => e.ref === r.id)?.amount).toBe(-price);
    }
    const expected =
      textUsagePrice(DEFAULT_PRICES, 'cm-sonnet-4.5', {
        inputTokens: whole.usage.input_tokens,
        outputTokens: whole.usage.output_tokens,
        cacheCreationTokens: 0,
        cacheReadTokens: 0,
      }) +
      textUsagePrice(DEFAULT_PRICES, 'cm-haiku-4.5', {
        inputTokens: streamed.usage.input_tokens,
        outputTokens: streamed.usage.output_tokens,
        cacheCreationTokens: 0,
        cacheReadTokens: 0,
      });
    const aborted = records.find((r) => r.outcome === 'aborted')!;
    expect(aborted.output_tokens).toBeGreaterThan(0);
    const abortedPrice = -ledger.find((e) => e.ref === aborted.id)!.amount;
    expect(await balanceOf(gw.url, id)).toBe(10_000_000 - expected - abortedPrice);
  });
});

describe('a charge refused while text settlements are on their way', () => {
  let gw: Gateway;
  beforeAll(async () => {
    // Text settlements reach PostgreSQL once a minute: an answered request's hold stays counted until then.
    gw = await startGateway({ env: { TEXT_USAGE_FLUSH_MS: '60000' } });
  }, 120_000);
  afterAll(async () => {
    if (gw) expect(await auditMismatches(gw.url)).toEqual([]);
    await gw?.stop();
  }, 120_000);

  test("a video create that only an answered text request's hold stands in the way of is decided again after the settlement is written", async () => {
    const body = JSON.stringify({ model: 'cm-haiku-4.5', max_tokens: 4000, messages: [{ role: 'user', content: 'a short answer please' }] });
    const ceiling = textCeiling(
      DEFAULT_PRICES,
      'cm-haiku-4.5',
      { endpoint: 'messages', body: JSON.parse(body) as Record<string, unknown>, bodyBytes: Buffer.byteLength(body) },
      4096,
    ).credits;
    // Enough for the video once the text request is billed at its price, not while its worst case is held.
    const { id, key } = await gw.issueKeyWithId('after-text', { quota: FAST + ceiling - 1 });
    const text = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body });
    expect(text.status).toBe(200);
    const answer = (await text.json()) as { usage: { input_tokens: number; output_tokens: number } };
    const price = textUsagePrice(DEFAULT_PRICES, 'cm-haiku-4.5', {
      inputTokens: answer.usage.input_tokens,
      outputTokens: answer.usage.output_tokens,
      cacheCreationTokens: 0,
      cacheReadTokens: 0,
    });
    expect(price).toBeLessThan(ceiling);
    // Refused (402) if the charge were decided with the text request's hold still counted.
    const created = await createTask(gw.url, key, { model: 'vidgen3-fast', prompt: 'paid for after the text settles' });
    expect(await balanceOf(gw.url, id)).toBe(ceiling - 1 - price);
    expect((await waitForTerminal(gw.url, key, created.id)).final.status).toBe('completed');
  });
});

describe('rate limits', () => {
  let gw: Gateway;
  let replicaUrl: string;
  beforeAll(async () => {
    execSync('redis-cli ping || redis-server --daemonize yes', { stdio: 'ignore', shell: '/bin/sh' });
    gw = await startGateway({ env: { REDIS_URL: 'redis://127.0.0.1:6379' } });
    replicaUrl = await gw.startApiReplica();
  }, 120_000);
  afterAll(async () => {
    if (gw) expect(await auditMismatches(gw.url)).toEqual([]);
    await gw?.stop();
  }, 120_000);

  test("429 with Retry-After on every endpoint family, through the SDKs' RateLimitError where there is one", async () => {
    // `remaining` is the x-ratelimit-remaining-requests header where the test reads raw HTTP.
    type Seen = { status: number; retryAfter: string | null; error: unknown; remaining?: string | null };
    const families: [string, (key: string) => Promise<Seen>][] = [
      [
        'video',
        async (key) => {
          const r = await call(`${gw.url}/v1/video/create`, { key, json: { model: 'vidgen3-fast', prompt: 'limited [sim:ms=200]' } });
          return { status: r.status, retryAfter: r.headers.get('retry-after'), error: r.body, remaining: r.headers.get('x-ratelimit-remaining-requests') };
        },
      ],
      [
        'videos',
        async (key) => {
          const r = await call(`${gw.url}/v1/videos/video_doesnotexist`, { key });
          return { status: r.status, retryAfter: r.headers.get('retry-after'), error: r.body, remaining: r.headers.get('x-ratelimit-remaining-requests') };
        },
      ],
      [
        'characters',
        async (key) => {
          const r = await call(`${gw.url}/motion/v1/characters/char_nobody`, { key });
          return { status: r.status, retryAfter: r.headers.get('retry-after'), error: r.body, remaining: r.headers.get('x-ratelimit-remaining-requests') };
        },
      ],
      [
        'chat',
        async (key) => {
          const openai = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
          const e = await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).then(
            () => null,
            (x: unknown) => x,
          );
          if (e === null) return { status: 200, retryAfter: null, error: null };
          expect(e).toBeInstanceOf(OpenAiRateLimitError);
          return { status: (e as OpenAiRateLimitError).status, retryAfter: (e as OpenAiRateLimitError).headers.get('retry-after'), error: e };
        },
      ],
      [
        'messages',
        async (key) => {
          const anthropic = new Anthropic({ apiKey: key, baseURL: gw.url, maxRetries: 0 });
          const e = await anthropic.messages.create({ model: 'cm-haiku-4.5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }).then(
            () => null,
            (x: unknown) => x,
          );
          if (e === null) return { status: 200, retryAfter: null, error: null };
          expect(e).toBeInstanceOf(AnthropicRateLimitError);
          return { status: (e as AnthropicRateLimitError).status, retryAfter: (e as AnthropicRateLimitError).headers.get('retry-after'), error: e };
        },
      ],
    ];
    for (const [family, request] of families) {
      const key = await gw.issueKey(`rpm-${family}`, { rate_limit_rpm: 2 });
      const first = await request(key);
      const second = await request(key);
      expect([first.status, second.status]).not.toContain(429);
      const third = await request(key);
      expect({ family, status: third.status }).toEqual({ family, status: 429 });
      expect(Number(third.retryAfter)).toBeGreaterThanOrEqual(1);
      // Answers let a client pace itself: what is left of the minute, whatever the status.
      if (first.remaining !== undefined)
        expect({ family, remaining: [first.remaining, second.remaining, third.remaining] }).toEqual({ family, remaining: ['1', '0', '0'] });
    }
  });

  test('two API processes share one limit through Redis', async () => {
    const key = await gw.issueKey('shared', { rate_limit_rpm: 10 });
    const statuses: number[] = [];
    for (let i = 0; i < 16; i++) {
      const base = i % 2 === 0 ? gw.url : replicaUrl;
      statuses.push((await call(`${base}/v1/models`, { key })).status);
    }
    // 10 per minute in all, not 10 per replica.
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(6);
  });

  test('tasks in flight: the third concurrent task gets 429 too_many_tasks; a finished task frees its slot', async () => {
    const key = await gw.issueKey('slots', { max_concurrent_tasks: 2 });
    const a = await createTask(gw.url, key, { model: 'vidgen3-fast', prompt: 'slot a [sim:ms=1500]' });
    await createTask(gw.url, key, { model: 'vidgen3-fast', prompt: 'slot b [sim:ms=1500]' });
    const third = await call<{ error: { code: string } }>(`${gw.url}/v1/video/create`, { key, json: { model: 'vidgen3-fast', prompt: 'slot c' } });
    expect(third.status).toBe(429);
    expect(third.body.error.code).toBe('too_many_tasks');
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    await waitForTerminal(gw.url, key, a.id);
    expect((await call(`${gw.url}/v1/video/create`, { key, json: { model: 'vidgen3-fast', prompt: 'slot c [sim:ms=200]' } })).status).toBe(200);
  });
});

describe('crashes: a worker killed at each step, a store gone mid-settle, a start lost', () => {
  let gw: Gateway;
  let workerDb: TcpProxy;
  let temporal: TcpProxy;
  let databaseUrl: string;
  let temporalClient: Client;
  beforeAll(async () => {
    temporalClient = new Client({ connection: await Connection.connect({ address: e2eEnv().temporalAddress }) });
    databaseUrl = await createTestDatabase('crashes');
    const pgUrl = new URL(databaseUrl);
    workerDb = await startTcpProxy(pgUrl.hostname, Number(pgUrl.port || 5432));
    const viaProxy = new URL(databaseUrl);
    viaProxy.host = `127.0.0.1:${workerDb.port}`;
    const temporalAddress = e2eEnv().temporalAddress;
    const [tHost, tPort] = temporalAddress.split(':');
    temporal = await startTcpProxy(tHost!, Number(tPort));
    gw = await startGateway({
      // The API reaches Temporal through a relay a test can cut; the worker reaches the store through another.
      temporalAddress: `127.0.0.1:${temporal.port}`,
      env: { DATABASE_URL: databaseUrl, TEMPORAL_RPC_TIMEOUT_MS: '1000', BILLING_RECONCILE_SECONDS: '1', UPSTREAM_RETRY_INITIAL_MS: '1500' },
      workerEnv: { TEMPORAL_ADDRESS: temporalAddress, DATABASE_URL: viaProxy.href },
    });
  }, 120_000);
  afterAll(async () => {
    if (gw) expect(await auditMismatches(gw.url)).toEqual([]);
    await gw?.stop();
    await workerDb?.close();
    await temporal?.close();
    await temporalClient?.connection.close();
  }, 120_000);

  /** The local activities a task's workflow ran, by type, from the markers in its history. */
  async function localActivitiesOf(taskId: string): Promise<string[]> {
    const history = await temporalClient.workflow.getHandle(taskId).fetchHistory();
    return (history.events ?? []).flatMap((e) => {
      const payload = e.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
      return payload ? [(JSON.parse(Buffer.from(payload).toString('utf8')) as { activity_type: string }).activity_type] : [];
    });
  }

  /** After the task ends: one charge, a refund exactly when it failed, the balance to match. */
  async function expectSettledOnce(keyId: string, key: string, taskId: string, quota: number): Promise<string> {
    const { final } = await waitForTerminal(gw.url, key, taskId, 120_000);
    const refunded = final.status === 'failed';
    expect(await taskEntries(gw.url, keyId, taskId)).toEqual(refunded ? [`charge:${-FAST}`, `refund:${FAST}`] : [`charge:${-FAST}`]);
    expect(await balanceOf(gw.url, keyId)).toBe(refunded ? quota : quota - FAST);
    return final.status;
  }

  test('a task that completes is settled by its download step, without a settle step of its own', async () => {
    const { id, key } = await gw.issueKeyWithId('settled-in-store', { quota: 10 * FAST });
    const task = await createTask(gw.url, key, { model: 'vidgen3-fast', prompt: 'plain [sim:ms=300]' });
    expect(await expectSettledOnce(id, key, task.id, 10 * FAST)).toBe('completed');
    const steps = await localActivitiesOf(task.id);
    // Its local steps are read (the claim is one), and none of them settled it.
    expect(steps).toContain('claimCharge');
    expect(steps).not.toContain('settleTask');
    // The API put its first-try limit (SUBMIT_FIRST_TRY_MAX_WAIT_MS, 60 s by default) in the run's input.
    const started = (await temporalClient.workflow.getHandle(task.id).fetchHistory()).events?.[0]?.workflowExecutionStartedEventAttributes;
    const input = JSON.parse(Buffer.from(started?.input?.payloads?.[0]?.data ?? []).toString('utf8')) as { firstTryMaxWaitMs?: unknown };
    expect(input.firstTryMaxWaitMs).toBe(60_000);
  });

  test('killed before the submit (no worker when the task is created)', async () => {
    const { id, key } = await gw.issueKeyWithId('before-submit', { quota: 10 * FAST });
    await gw.killWorker();
    const task = await createTask(gw.url, key, { model: 'vidgen3-fast', prompt: 'waits for a worker [sim:ms=300]' });
    expect(await balanceOf(gw.url, id)).toBe(9 * FAST); // charged before anything ran
    await gw.startWorker();
    expect(await expectSettledOnce(id, key, task.id, 10 * FAST)).toBe('completed');
  });

  test('killed between submit attempts (the provider answered 5xx)', async () => {
    const { id, key } = await gw.issueKeyWithId('mid-submit', { quota: 10 * FAST });
    const task = await createTask(gw.url, key, { model: 'vidgen3-fast', prompt: 'flaky submit [sim:submit-5xx=2] [sim:ms=300]' });
    await sleep(700);
    await gw.killWorker();
    await gw.startWorker();
    expect(await expectSettledOnce(id, key, task.id, 10 * FAST)).toBe('completed');
  });

  test.each([
    ['completes', '', 'completed'],
    ['fails', '[sim:fail]', 'failed'],
  ])('killed while polling a job that then %s', async (_what, marker, outcome) => {
    const { id, key } = await gw.issueKeyWithId('mid-poll', { quota: 10 * FAST });
    const task = await createTask(gw.url, key, { model: 'vidgen3-fast', prompt: `long job ${marker} [sim:ms=2500]` });
    await waitForStatus(gw, key, task.id, 'processing');
    await gw.killWorker();
    await sleep(3000); // the job ends while no worker runs
    await gw.startWorker();
    expect(await expectSettledOnce(id, key, task.id, 10 * FAST)).toBe(outcome);
  });

  test('killed between download attempts (the provider answered 5xx for the file; the store step also settles)', async () => {
    const { id, key } = await gw.issueKeyWithId('mid-store', { quota: 10 * FAST });
    const task = await createTask(gw.url, key, { model: 'vidgen3-fast', prompt: 'flaky file [sim:content-5xx=2] [sim:ms=300]' });
    await sleep(2500); // the job is done and the first download has failed
    await gw.killWorker();
    await gw.startWorker();
    expect(await expectSettledOnce(id, key, task.id, 10 * FAST)).toBe('completed');
  });

  test('killed while the settle step cannot reach the store: completed and failed tasks each settle once', async () => {
    const { id, key } = await gw.issueKeyWithId('mid-settle', { quota: 10 * FAST });
    const ok = await createTask(gw.url, key, { model: 'vidgen3-fast', prompt: 'settles late [sim:ms=2500]' });
    const bad = await createTask(gw.url, key, { model: 'vidgen3-fast', prompt: 'refunds late [sim:fail] [sim:ms=2500]' });
    await waitForStatus(gw, key, ok.id, 'processing');
    workerDb.cut();
    await sleep(6000); // both jobs end meanwhile; their settle steps fail and retry
    // Stored or failed upstream, but not settled: the status waits for the settle step.
    expect((await queryTask(gw.url, key, ok.id)).body.status).toBe('processing');
    expect((await queryTask(gw.url, key, bad.id)).body.status).not.toBe('failed');
    expect(await balanceOf(gw.url, id)).toBe(8 * FAST);
    await gw.killWorker();
    workerDb.restore();
    await gw.startWorker();
    const { final: okFinal } = await waitForTerminal(gw.url, key, ok.id, 120_000);
    const { final: badFinal } = await waitForTerminal(gw.url, key, bad.id, 120_000);
    expect([okFinal.status, badFinal.status]).toEqual(['completed', 'failed']);
    // The download step could not settle the stored task: the workflow's settle step did.
    expect(await localActivitiesOf(ok.id)).toContain('settleTask');
    expect(await taskEntries(gw.url, id, ok.id)).toEqual([`charge:${-FAST}`]);
    expect(await taskEntries(gw.url, id, bad.id)).toEqual([`charge:${-FAST}`, `refund:${FAST}`]);
    expect(await balanceOf(gw.url, id)).toBe(9 * FAST);
  });

  /** Seconds from a charge to the reconciler's first look at it, once the API has recorded the start (null before). */
  async function firstCheckAfter(taskId: string): Promise<number | null> {
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      for (let i = 0; i < 40; i++) {
        const { rows } = await db.query<{ wait: number | null }>(
          'select extract(epoch from next_check_at - created_at)::int as wait from billed_tasks where task_id = $1',
          [taskId],
        );
        if (rows[0]?.wait != null) return rows[0].wait;
        await sleep(250);
      }
      return null;
    } finally {
      await db.end();
    }
  }

  test('a start the API saw is not read back from Temporal by the reconciler for 10 minutes', async () => {
    const { key } = await gw.issueKeyWithId('seen-start', { quota: 10 * FAST });
    const task = await createTask(gw.url, key, { model: 'vidgen3-fast', prompt: 'started [sim:ms=3000]' });
    const wait = await firstCheckAfter(task.id);
    expect(wait).toBeGreaterThanOrEqual(600);
    expect(wait).toBeLessThan(615);
  });

  /** The task's charge and refund entries, once a refund is there (or after 15 s). */
  async function settledEntries(keyId: string, taskId: string): Promise<string[]> {
    let entries: string[] = [];
    for (let i = 0; i < 60 && !entries.some((e) => e.startsWith('refund')); i++) {
      await sleep(250);
      entries = (await ledgerOf(gw.url, keyId)).filter((e) => e.kind !== 'grant' && e.ref === taskId).map((e) => `${e.kind}:${e.amount}:${e.reason}`);
    }
    return entries.sort();
  }

  test('a workflow an operator terminated: refunded once within a reconciler pass, found through visibility', async () => {
    const { id, key } = await gw.issueKeyWithId('terminated-sweep', { quota: 10 * FAST });
    const task = await createTask(gw.url, key, { model: 'vidgen3-fast', prompt: 'terminated now [sim:ms=60000]' });
    // Its charge's first due look is ten minutes away: only the sweep of stopped runs can find it.
    expect(await firstCheckAfter(task.id)).toBeGreaterThanOrEqual(600);
    await temporalClient.workflow.getHandle(task.id).terminate('an operator stopped it');
    expect(await settledEntries(id, task.id)).toEqual([`charge:${-FAST}:video task`, `refund:${FAST}:the task's workflow ended without finishing`]);
    expect(await balanceOf(gw.url, id)).toBe(10 * FAST);
    // Later passes see the same run again (their windows overlap) and change nothing.
    await sleep(2500);
    expect(await settledEntries(id, task.id)).toHaveLength(2);
    expect(await balanceOf(gw.url, id)).toBe(10 * FAST);
  });

  test('a start lost with Temporal unreachable: 503, and the reconciler refunds the charge once it can see no task exists', async () => {
    const { id, key } = await gw.issueKeyWithId('lost-start', { quota: 10 * FAST });
    temporal.cut();
    const res = await call<{ error: { code: string } }>(`${gw.url}/v1/video/create`, { key, json: { model: 'vidgen3-fast', prompt: 'never starts' } });
    expect(res.status).toBe(503);
    temporal.restore();
    let entries: string[] = [];
    for (let i = 0; i < 120 && !entries.some((e) => e.startsWith('refund')); i++) {
      await sleep(500);
      entries = (await ledgerOf(gw.url, id)).filter((e) => e.kind !== 'grant').map((e) => `${e.kind}:${e.amount}:${e.reason}`);
    }
    expect(entries.sort()).toEqual([`charge:${-FAST}:video task`, `refund:${FAST}:the task never started`]);
    expect(await balanceOf(gw.url, id)).toBe(10 * FAST);
  });
});
