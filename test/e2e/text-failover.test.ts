/**
 * Text channels with failover (CHANNELS_FILE): a failed attempt moves to the next channel
 * only while nothing has reached the client; a channel that keeps failing rests; when every
 * channel fails the client gets the last upstream error (or a 502 in its protocol's shape);
 * a client that leaves a stream aborts the upstream (usage outcome aborted); a silent stream is ended
 * with an error event after TEXT_STREAM_IDLE_MS.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Anthropic, { APIError as AnthropicAPIError, BadRequestError, InternalServerError, OverloadedError } from '@anthropic-ai/sdk';
import OpenAI, { APIError as OpenAIAPIError } from 'openai';
import { e2eEnv, startGateway, type Gateway } from '../support/stack';
import { channelsOf, keyIdByName, nonce, readSse, usageRowFor, type ChannelView, type SseFrame } from '../support/text';

let gw: Gateway;
let key: string;
let keyId: string;
let anthropic: Anthropic;
let openai: OpenAI;
let tmpDir: string;
let closedPort: number;

const SONNET = 'cm-sonnet-4.5'; // primary (10) -> backup (0)
const HAIKU = 'cm-haiku-4.5'; // dead-native (20, closed port) -> haiku-live (0)
const OPUS = 'cm-opus-4-5-20251101'; // dead-only-native: nothing reachable
const MINI = 'gpt-4o-mini'; // oa-primary (10) -> oa-backup (0)
const GPT41 = 'gpt-4.1'; // dead-only-openai: nothing reachable
const IDLE_MS = 1500;
const user = (content: string) => [{ role: 'user' as const, content }];

function channelsYaml(sim: string, dead: string): string {
  const ch = (name: string, type: string, baseUrl: string, models: string[], priority: number) =>
    `  - name: ${name}\n    type: ${type}\n    base_url: ${baseUrl}\n    api_key: sim-key\n    models: [${models.map((m) => JSON.stringify(m)).join(', ')}]\n    priority: ${priority}\n`;
  return `channels:\n${[
    ch('primary', 'anthropic-native', sim, [SONNET], 10),
    ch('backup', 'anthropic-native', sim, [SONNET], 0),
    ch('dead-native', 'anthropic-native', dead, [HAIKU], 20),
    ch('haiku-live', 'anthropic-native', sim, [HAIKU], 0),
    ch('dead-only-native', 'anthropic-native', dead, [OPUS], 0),
    ch('oa-primary', 'openai-compatible', `${sim}/v1`, [MINI], 10),
    ch('oa-backup', 'openai-compatible', `${sim}/v1`, [MINI], 0),
    ch('dead-only-openai', 'openai-compatible', `${dead}/v1`, [GPT41], 0),
  ].join('')}`;
}

beforeAll(async () => {
  const { simulatorUrl } = e2eEnv();
  // Port 1 is never served on this machine: a free port picked now could be taken by another
  // test file's server (the suites run in parallel) before the gateway dials it.
  closedPort = 1;
  tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'text-failover-'));
  const file = path.join(tmpDir, 'channels.yaml');
  fs.writeFileSync(file, channelsYaml(simulatorUrl, `http://127.0.0.1:${closedPort}`));
  gw = await startGateway({
    noWorker: true,
    env: { CHANNELS_FILE: file, CHANNEL_FAILURE_THRESHOLD: '2', CHANNEL_COOLDOWN_SECONDS: '120', TEXT_STREAM_IDLE_MS: String(IDLE_MS) },
  });
  key = await gw.issueKey('failover');
  keyId = await keyIdByName(gw.url, 'failover');
  anthropic = new Anthropic({ apiKey: key, baseURL: gw.url, maxRetries: 0 });
  openai = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true });
}, 120_000);

/** served/failed changes per channel between two /admin/channels snapshots (unchanged ones omitted). */
function delta(before: Record<string, ChannelView>, after: Record<string, ChannelView>): Record<string, { served: number; failed: number }> {
  const out: Record<string, { served: number; failed: number }> = {};
  for (const [name, a] of Object.entries(after)) {
    const b = before[name]!;
    const d = { served: a.served - b.served, failed: a.failed - b.failed };
    if (d.served !== 0 || d.failed !== 0) out[name] = d;
  }
  return out;
}

async function measured<T>(
  fn: () => Promise<T>,
): Promise<{ result: T; change: Record<string, { served: number; failed: number }>; after: Record<string, ChannelView> }> {
  const before = await channelsOf(gw.url);
  const result = await fn();
  const after = await channelsOf(gw.url);
  return { result, change: delta(before, after), after };
}

function rawPost(endpoint: 'messages' | 'chat', body: Record<string, unknown>, init: { requestId?: string; signal?: AbortSignal } = {}): Promise<Response> {
  return fetch(`${gw.url}/v1/${endpoint === 'messages' ? 'messages' : 'chat/completions'}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...(init.requestId ? { 'x-request-id': init.requestId } : {}) },
    body: JSON.stringify(body),
    signal: init.signal,
  });
}

const sonnet = (prompt: string) => anthropic.messages.create({ model: SONNET, max_tokens: 64, messages: user(prompt) });

test('the file declares the channels; all start healthy and unused', async () => {
  const channels = await channelsOf(gw.url);
  expect(Object.keys(channels).sort()).toEqual([
    'backup',
    'dead-native',
    'dead-only-native',
    'dead-only-openai',
    'haiku-live',
    'oa-backup',
    'oa-primary',
    'primary',
  ]);
  expect(channels.primary).toMatchObject({ type: 'anthropic-native', priority: 10, models: [SONNET], simulated: false });
  expect(channels['oa-backup']).toMatchObject({ type: 'openai-compatible', priority: 0, models: [MINI] });
  for (const c of Object.values(channels)) {
    expect(c).toMatchObject({ state: 'healthy', served: 0, failed: 0, consecutive_failures: 0, failovers: 0, cooldowns: 0, recent_errors: [] });
  }
});

describe('(a) a 5xx before the first byte fails over to the next channel', () => {
  test('messages, non-streamed: 500 on primary, 200 from backup; primary stays first', async () => {
    const prompt = `fail once ${nonce()} [sim:submit-5xx=1]`;
    const { result, change, after } = await measured(() => sonnet(prompt));
    expect(result.content).toEqual([{ type: 'text', text: `Echo: ${prompt}` }]);
    expect(change).toEqual({ primary: { served: 0, failed: 1 }, backup: { served: 1, failed: 0 } });
    expect(after.primary).toMatchObject({ state: 'healthy', consecutive_failures: 1, last_error: 'HTTP 500' });
    // The operator's view (and the console's channels page): the request left primary for backup.
    expect(after.primary!.failovers).toBe(1);
    expect(after.primary!.recent_errors[0]).toEqual({ at: expect.any(Number), message: 'HTTP 500' });
    expect(Math.abs(after.primary!.recent_errors[0]!.at - Date.now() / 1000)).toBeLessThan(60);
    expect(after.backup!.failovers).toBe(0);
    // One failure below the threshold does not move the channel: the next request is primary's.
    const next = await measured(() => sonnet('plain request'));
    expect(next.change).toEqual({ primary: { served: 1, failed: 0 } });
    expect(next.after.primary!.consecutive_failures).toBe(0);
  });

  test('messages, streamed: the stream comes whole from backup', async () => {
    const prompt = `fail once streamed ${nonce()} [sim:submit-5xx=1]`;
    const { result, change } = await measured(async () => {
      const stream = anthropic.messages.stream({ model: SONNET, max_tokens: 64, messages: user(prompt) });
      const types: string[] = [];
      for await (const e of stream) types.push(e.type);
      return { types, final: await stream.finalMessage() };
    });
    expect(result.final.content).toEqual([{ type: 'text', text: `Echo: ${prompt}` }]);
    expect(result.types[0]).toBe('message_start');
    expect(result.types[result.types.length - 1]).toBe('message_stop');
    expect(result.types.filter((t) => t === 'message_start')).toHaveLength(1);
    expect(change).toEqual({ primary: { served: 0, failed: 1 }, backup: { served: 1, failed: 0 } });
    expect((await measured(() => sonnet('plain again'))).change).toEqual({ primary: { served: 1, failed: 0 } });
  });

  test('chat completions, non-streamed and streamed: oa-primary 500, oa-backup answers', async () => {
    const prompt = `chat fail once ${nonce()} [sim:submit-5xx=1]`;
    const once = await measured(() => openai.chat.completions.create({ model: MINI, messages: user(prompt) }));
    expect(once.result.choices[0]!.message.content).toBe(`Echo: ${prompt}`);
    expect(once.change).toEqual({ 'oa-primary': { served: 0, failed: 1 }, 'oa-backup': { served: 1, failed: 0 } });
    expect((await measured(() => openai.chat.completions.create({ model: MINI, messages: user('plain chat') }))).change).toEqual({
      'oa-primary': { served: 1, failed: 0 },
    });

    const streamedPrompt = `chat fail once streamed ${nonce()} [sim:submit-5xx=1]`;
    const streamed = await measured(async () => {
      const stream = await openai.chat.completions.create({ model: MINI, stream: true, messages: user(streamedPrompt) });
      let text = '';
      let finish: string | null = null;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      return { text, finish };
    });
    expect(streamed.result).toEqual({ text: `Echo: ${streamedPrompt}`, finish: 'stop' });
    expect(streamed.change).toEqual({ 'oa-primary': { served: 0, failed: 1 }, 'oa-backup': { served: 1, failed: 0 } });
    expect((await measured(() => openai.chat.completions.create({ model: MINI, messages: user('plain chat again') }))).change).toEqual({
      'oa-primary': { served: 1, failed: 0 },
    });
  });
  test('messages: a dropped connection ([sim:drop=1]) still answers 200', async () => {
    const prompt = `dropped once ${nonce()} [sim:drop=1]`;
    const { result, change } = await measured(() => sonnet(prompt));
    expect(result.content).toEqual([{ type: 'text', text: `Echo: ${prompt}` }]);
    // On a reused keep-alive socket the reset is retried once on the same channel (postText);
    // on a fresh socket it is a channel failure and the backup answers.
    expect([{ primary: { served: 1, failed: 0 } }, { primary: { served: 0, failed: 1 }, backup: { served: 1, failed: 0 } }]).toContainEqual(change);
    expect((await measured(() => sonnet('plain after drop'))).change).toEqual({ primary: { served: 1, failed: 0 } });
  });
});

describe('(b) an unreachable channel', () => {
  test('requests succeed via the next channel; after 2 failures it rests and is no longer tried', async () => {
    const ask = (prompt: string) => anthropic.messages.create({ model: HAIKU, max_tokens: 64, messages: user(prompt) });
    const first = await measured(() => ask('via the next channel 1'));
    expect(first.result.content).toEqual([{ type: 'text', text: 'Echo: via the next channel 1' }]);
    expect(first.change).toEqual({ 'dead-native': { served: 0, failed: 1 }, 'haiku-live': { served: 1, failed: 0 } });
    expect(first.after['dead-native']).toMatchObject({ state: 'healthy', consecutive_failures: 1 });
    expect(first.after['dead-native']!.last_error).toMatch(/ECONNREFUSED/);

    // The second failure (this one streamed) reaches the threshold.
    const second = await measured(async () => {
      const stream = anthropic.messages.stream({ model: HAIKU, max_tokens: 64, messages: user('via the next channel 2') });
      return (await stream.finalMessage()).content;
    });
    expect(second.result).toEqual([{ type: 'text', text: 'Echo: via the next channel 2' }]);
    expect(second.change).toEqual({ 'dead-native': { served: 0, failed: 1 }, 'haiku-live': { served: 1, failed: 0 } });
    const resting = second.after['dead-native']!;
    expect(resting).toMatchObject({ state: 'resting', consecutive_failures: 2, failed: 2 });
    const now = Date.now() / 1000;
    expect(resting.resting_until).toBeGreaterThan(now + 100);
    expect(resting.resting_until).toBeLessThanOrEqual(now + 121);

    // Resting: later requests go straight to haiku-live.
    for (const n of [3, 4, 5]) {
      const later = await measured(() => ask(`via the next channel ${n}`));
      expect(later.change).toEqual({ 'haiku-live': { served: 1, failed: 0 } });
    }
    expect((await channelsOf(gw.url))['dead-native']).toMatchObject({ state: 'resting', failed: 2 });
  });
});

describe('(c) no failover once a byte reached the client', () => {
  test('messages: a mid-stream error reaches the client as event: error; backup is not asked', async () => {
    const prompt = `break after some deltas ${nonce()} [sim:midstream-error]`;
    const { result: frames, change } = await measured(async () =>
      readSse(await rawPost('messages', { model: SONNET, max_tokens: 64, stream: true, messages: user(prompt) })),
    );
    expect(frames[0]!.event).toBe('message_start');
    expect(frames.some((f) => f.event === 'content_block_delta')).toBe(true);
    const last = frames[frames.length - 1]!;
    expect(last.event).toBe('error');
    expect(JSON.parse(last.data)).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
    expect(frames.filter((f) => f.event === 'message_start')).toHaveLength(1);
    expect(change).toEqual({ primary: { served: 1, failed: 0 } });
  });

  test('chat: a mid-stream error makes the SDK throw; oa-backup is not asked', async () => {
    const prompt = `chat break ${nonce()} [sim:midstream-error]`;
    const { result, change } = await measured(async () => {
      const stream = await openai.chat.completions.create({ model: MINI, stream: true, messages: user(prompt) });
      const roles: string[] = [];
      try {
        for await (const chunk of stream) if (chunk.choices[0]?.delta.role) roles.push(chunk.choices[0].delta.role);
      } catch (err) {
        return { err, roles };
      }
      return { err: null, roles };
    });
    expect(result.err).toBeInstanceOf(OpenAIAPIError);
    expect(result.roles).toEqual(['assistant']);
    expect(change).toEqual({ 'oa-primary': { served: 1, failed: 0 } });
  });
});

describe("(d) a 4xx from the upstream is the client's answer, not a failover", () => {
  test('messages: [sim:400] and an upstream validation 400 pass through from primary alone', async () => {
    const marker = await measured(() => sonnet(`bad request ${nonce()} [sim:400]`).catch((e: unknown) => e));
    expect(marker.result).toBeInstanceOf(BadRequestError);
    expect((marker.result as BadRequestError).apiMessage).toMatch(/\[sim:400\]/);
    expect(marker.change).toEqual({ primary: { served: 1, failed: 0 } });

    // The gateway's schema lets unknown native fields through; the (strict) upstream refuses them.
    const unknownField = await measured(async () => {
      const res = await rawPost('messages', { model: SONNET, max_tokens: 64, messages: user('x'), bogus_field: 1 });
      return { status: res.status, body: (await res.json()) as { type: string; error: { type: string; message: string } } };
    });
    expect(unknownField.result.status).toBe(400);
    expect(unknownField.result.body).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'bogus_field: Extra inputs are not permitted' },
    });
    expect(unknownField.change).toEqual({ primary: { served: 1, failed: 0 } });

    const streamed = await measured(async () => {
      const stream = anthropic.messages.stream({ model: SONNET, max_tokens: 64, messages: user(`bad streamed ${nonce()} [sim:400]`) });
      return stream.finalMessage().catch((e: unknown) => e);
    });
    expect(streamed.result).toBeInstanceOf(BadRequestError);
    expect(streamed.change).toEqual({ primary: { served: 1, failed: 0 } });
  });

  test('chat: [sim:404] passes through as NotFoundError from oa-primary alone', async () => {
    const { result, change } = await measured(() =>
      openai.chat.completions.create({ model: MINI, messages: user(`missing ${nonce()} [sim:404]`) }).catch((e: unknown) => e),
    );
    expect(result).toBeInstanceOf(OpenAI.NotFoundError);
    expect(change).toEqual({ 'oa-primary': { served: 1, failed: 0 } });
  });
});

describe('(e) every channel fails', () => {
  test('messages: 529 on both channels -> the client gets the last 529 overloaded_error', async () => {
    const { result, change } = await measured(() => sonnet(`overloaded everywhere ${nonce()} [sim:529]`).catch((e: unknown) => e));
    expect(result).toBeInstanceOf(OverloadedError);
    expect((result as OverloadedError).status).toBe(529);
    expect((result as OverloadedError).type).toBe('overloaded_error');
    expect((result as OverloadedError).apiMessage).toBe('Overloaded');
    expect(change).toEqual({ primary: { served: 0, failed: 1 }, backup: { served: 0, failed: 1 } });
    expect((await measured(() => sonnet('recovered'))).change).toEqual({ primary: { served: 1, failed: 0 } });
  });

  test('chat, streamed: 503 on both channels -> the SDK gets status 503 before any chunk', async () => {
    const { result, change } = await measured(() =>
      openai.chat.completions.create({ model: MINI, stream: true, messages: user(`down everywhere ${nonce()} [sim:503]`) }).catch((e: unknown) => e),
    );
    expect(result).toBeInstanceOf(OpenAI.InternalServerError);
    expect((result as OpenAIAPIError).status).toBe(503);
    expect((result as OpenAIAPIError).type).toBe('server_error');
    expect(change).toEqual({ 'oa-primary': { served: 0, failed: 1 }, 'oa-backup': { served: 0, failed: 1 } });
    expect((await measured(() => openai.chat.completions.create({ model: MINI, messages: user('recovered chat') }))).change).toEqual({
      'oa-primary': { served: 1, failed: 0 },
    });
  });

  test('connection errors only -> 502 in the Anthropic shape', async () => {
    const err = await anthropic.messages.create({ model: OPUS, max_tokens: 64, messages: user('nobody home') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InternalServerError);
    expect((err as InternalServerError).status).toBe(502);
    expect((err as InternalServerError).type).toBe('api_error');
    expect((err as InternalServerError).apiMessage).toMatch(/could not be reached/);
    const res = await rawPost('messages', { model: OPUS, max_tokens: 64, stream: true, messages: user('nobody home, streamed') });
    expect(res.status).toBe(502);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toEqual({ type: 'error', error: { type: 'api_error', message: expect.stringMatching(/ECONNREFUSED/) } });
  });

  test('connection errors only -> 502 in the OpenAI shape', async () => {
    const err = await openai.chat.completions.create({ model: GPT41, messages: user('nobody home') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect((err as OpenAIAPIError).status).toBe(502);
    const res = await rawPost('chat', { model: GPT41, messages: user('nobody home, raw') });
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual({ error: { message: expect.stringMatching(/could not be reached/), type: 'server_error', param: null, code: null } });
  });
});

describe('(f) a client that leaves mid-stream', () => {
  test('messages: abort after the first event; the request is recorded as aborted; the gateway keeps serving', async () => {
    const requestId = `req-leave-${nonce()}`;
    const controller = new AbortController();
    const res = await rawPost(
      'messages',
      { model: SONNET, max_tokens: 64, stream: true, messages: user(`hold on ${nonce()} [sim:hang]`) },
      { requestId, signal: controller.signal },
    );
    expect(res.status).toBe(200);
    const frames: SseFrame[] = [];
    await readSse(res, (f) => {
      frames.push(f);
      controller.abort();
      return true;
    }).catch((err: unknown) => {
      if (!controller.signal.aborted) throw err;
    });
    expect(frames.map((f) => f.event)).toEqual(['message_start']);
    const row = await usageRowFor(gw.url, keyId, requestId);
    expect(row).toMatchObject({ streamed: true, endpoint: 'messages', model: SONNET, channel: 'primary' });
    expect(row.outcome).toBe('aborted');
    expect(row.input_tokens).toBeGreaterThan(0);
    const next = await sonnet('still serving');
    expect(next.content).toEqual([{ type: 'text', text: 'Echo: still serving' }]);
  });

  test('chat: stream.controller.abort() after the role chunk; recorded as aborted; still serving', async () => {
    const requestId = `req-leave-chat-${nonce()}`;
    const stream = await openai.chat.completions.create(
      { model: MINI, stream: true, messages: user(`hold on chat ${nonce()} [sim:hang]`) },
      { headers: { 'x-request-id': requestId } },
    );
    const roles: string[] = [];
    for await (const chunk of stream) {
      roles.push(chunk.choices[0]?.delta.role ?? '');
      stream.controller.abort();
    }
    expect(roles).toEqual(['assistant']);
    const row = await usageRowFor(gw.url, keyId, requestId);
    expect(row).toMatchObject({ streamed: true, endpoint: 'chat', model: MINI, channel: 'oa-primary' });
    expect(row.outcome).toBe('aborted');
    const next = await openai.chat.completions.create({ model: MINI, messages: user('chat still serving') });
    expect(next.choices[0]!.message.content).toBe('Echo: chat still serving');
  });

  test('a non-streamed request whose client leaves early runs on to its answer: the channel serves it and it is billed', async () => {
    const controller = new AbortController();
    const requestId = `req-early-leave-${nonce()}`;
    const { result, change } = await measured(async () => {
      const pending = rawPost(
        'messages',
        { model: SONNET, max_tokens: 64, messages: user(`slow answer ${nonce()} [sim:slow=1500]`) },
        { requestId, signal: controller.signal },
      );
      setTimeout(() => controller.abort(), 300);
      const started = Date.now();
      const err = await pending.then(
        () => null,
        (e: unknown) => e,
      );
      const waited = Date.now() - started;
      // The answer still comes, after the client left.
      const row = await usageRowFor(gw.url, keyId, requestId);
      return { err, waited, row };
    });
    expect((result.err as Error).name).toBe('AbortError');
    expect(result.waited).toBeLessThan(1000);
    expect(result.row).toMatchObject({ outcome: 'aborted', streamed: false, channel: 'primary' });
    expect(result.row.output_tokens).toBeGreaterThan(0);
    expect(change).toEqual({ primary: { served: 1, failed: 0 } });
  });
});

describe(`(g) TEXT_STREAM_IDLE_MS=${IDLE_MS}: a silent upstream stream is ended with an error`, () => {
  test('messages: event: error within a few seconds instead of hanging; usage outcome failed', async () => {
    const requestId = `req-idle-${nonce()}`;
    const started = Date.now();
    const res = await rawPost('messages', { model: SONNET, max_tokens: 64, stream: true, messages: user(`go quiet ${nonce()} [sim:hang]`) }, { requestId });
    const frames = await readSse(res);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(IDLE_MS - 100);
    expect(elapsed).toBeLessThan(6000);
    expect(frames.map((f) => f.event)).toEqual(['message_start', 'error']);
    const error = JSON.parse(frames[1]!.data) as { type: string; error: { type: string; message: string } };
    expect(error).toEqual({ type: 'error', error: { type: 'api_error', message: expect.stringMatching(/^The upstream sent nothing for 2 s/) } });
    const row = await usageRowFor(gw.url, keyId, requestId);
    expect(row).toMatchObject({ outcome: 'failed', channel: 'primary', streamed: true });
  });

  test('messages through the SDK: the stream rejects with an api_error', async () => {
    const started = Date.now();
    const stream = anthropic.messages.stream({ model: SONNET, max_tokens: 64, messages: user(`go quiet sdk ${nonce()} [sim:hang]`) });
    const err = await stream.finalMessage().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AnthropicAPIError);
    expect((err as AnthropicAPIError).type).toBe('api_error');
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(IDLE_MS - 100);
    expect(elapsed).toBeLessThan(6000);
  });

  test('chat: an error data line ends the stream; the SDK throws', async () => {
    const started = Date.now();
    const res = await rawPost('chat', { model: MINI, stream: true, messages: user(`chat go quiet ${nonce()} [sim:hang]`) });
    const frames = await readSse(res);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(IDLE_MS - 100);
    expect(elapsed).toBeLessThan(6000);
    expect(frames).toHaveLength(2);
    expect((JSON.parse(frames[0]!.data) as { choices: { delta: { role?: string } }[] }).choices[0]!.delta.role).toBe('assistant');
    const error = JSON.parse(frames[1]!.data) as { error: { message: string } };
    expect(error).toEqual({
      error: { message: expect.stringMatching(/^The upstream sent nothing for 2 s/), type: 'server_error', param: null, code: 'upstream_stream_broken' },
    });

    const stream = await openai.chat.completions.create({ model: MINI, stream: true, messages: user(`chat go quiet sdk ${nonce()} [sim:hang]`) });
    const err = await (async () => {
      for await (const chunk of stream) void chunk;
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAIAPIError);
    expect((err as OpenAIAPIError).message).toMatch(/The upstream sent nothing for 2 s/);
  });
});

describe('(f) count_tokens goes through the same proxy', () => {
  test('answered by the first healthy channel, and nothing reachable is a 502 in the Anthropic shape', async () => {
    const counted = await measured(() => anthropic.messages.countTokens({ model: SONNET, messages: user('count me') }));
    expect(counted.result.input_tokens).toBeGreaterThan(0);
    expect(counted.change).toEqual({ primary: { served: 1, failed: 0 } });

    const nobody = await measured(() => anthropic.messages.countTokens({ model: OPUS, messages: user('nobody home') }).catch((e: unknown) => e));
    expect(nobody.result).toBeInstanceOf(InternalServerError);
    expect((nobody.result as InternalServerError).status).toBe(502);
    expect((nobody.result as InternalServerError).apiMessage).toMatch(/could not be reached/);
    expect(nobody.change).toEqual({ 'dead-only-native': { served: 0, failed: 1 } });
  });
});
