/**
 * The webhook activities against the embedded store and a real HTTP receiver: an announce that
 * runs twice makes one event (and starts its delivery under the same id), no target or no secret
 * makes none, each attempt is signed afresh and recorded, a refused attempt is retried, a target
 * on a private address is never called unless allowed.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { projectRoot } from '../../src/config/paths';
import { UrlSigner } from '../../src/files/signed-url';
import { KeyStore } from '../../src/store/keys';
import { migrate } from '../../src/store/migrations';
import { WebhookStore } from '../../src/store/webhooks';
import { initialState, type TaskState } from '../../src/tasks/task';
import { createWebhookActivities, type WebhookSettings } from '../../src/webhooks/activities';
import { UNDELIVERABLE, type WebhookDeliveryInput } from '../../src/webhooks/announce-types';
import { postWebhook } from '../../src/webhooks/post';
import { embeddedStore, type OpenedStore } from '../support/stores';
import { taskRequest } from '../support/task-request';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { verifyWebhook } = require(path.join(projectRoot(), 'docs', 'snippets', 'verify-webhook.cjs')) as {
  verifyWebhook: (secret: string, headers: Record<string, string>, body: string) => { type: string; data: { id: string; video_url: string | null } };
};

const SETTINGS: WebhookSettings = {
  allowHttp: true,
  allowPrivate: true,
  timeoutMs: 2000,
  retryInitialMs: 10,
  retryMaxMs: 100,
  deliverForMs: 60_000,
  keepDays: 30,
};

let opened: OpenedStore;
let store: WebhookStore;
let keys: KeyStore;
let receiver: http.Server;
let receiverUrl: string;
let answer = 200;
const received: { headers: Record<string, string>; body: string }[] = [];

beforeAll(async () => {
  opened = await embeddedStore();
  await migrate(opened.db);
  store = new WebhookStore(opened.db);
  keys = new KeyStore(opened.db);
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(answer).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
}, 60_000);

afterAll(async () => {
  receiver?.close();
  await opened?.cleanup();
});

function activities(settings: WebhookSettings = SETTINGS) {
  const started: WebhookDeliveryInput[] = [];
  const acts = createWebhookActivities({
    store,
    signer: new UrlSigner('test-signing-secret', 'http://gateway.test', 3600),
    settings,
    startDelivery: async (input) => void started.push(input),
  });
  return { acts, started };
}

function completedState(ownerId: string): TaskState {
  const state = initialState(taskRequest({ taskId: `vidgen3:${Date.now()}-abcdefghij`, ownerId, prompt: 'a fox' }));
  return { ...state, status: 'completed', progress: 100, video: { key: `videos/${state.id}.mp4`, contentType: 'video/mp4', bytes: 10 } };
}

test('an announce that runs twice makes one event; no target or no secret makes none', async () => {
  const key = await keys.issue('announce');
  const { acts, started } = activities();
  const state = completedState(key.id);
  const announce = { subject: 'video' as const, id: state.id, keyId: key.id, outcome: 'completed' as const, state };
  expect(await acts.announceTerminal(announce)).toEqual({ skipped: 'no_target' });
  expect(await acts.announceTerminal({ ...announce, callbackUrl: receiverUrl })).toEqual({ skipped: 'no_secret' });
  const { secret } = await store.setEndpoint(key.id, receiverUrl);
  const first = await acts.announceTerminal(announce);
  const second = await acts.announceTerminal(announce);
  expect(first).toEqual({ eventId: `evt_video_${state.id}_completed` });
  expect(second).toEqual(first);
  // The same delivery workflow id both times: Temporal refuses the second start (a duplicate id).
  expect(started.map((s) => s.eventId)).toEqual([`evt_video_${state.id}_completed`, `evt_video_${state.id}_completed`]);
  expect(started[0]).toMatchObject({ retryInitialMs: 10, retryMaxMs: 100, deliverForMs: 60_000, attemptTimeoutMs: 32_000 });
  const events = await store.deliveries(key.id, { limit: 10 });
  expect(events).toHaveLength(1);
  expect(events[0]!.payload).toMatchObject({ type: 'video.completed', data: { id: state.id, status: 'completed' } });
  expect(secret).toMatch(/^whsec_/);
});

test('each attempt is signed afresh and recorded; a refusal is retried, a 2xx delivers once', async () => {
  const key = await keys.issue('deliver');
  const { secret } = await store.setEndpoint(key.id, receiverUrl);
  const { acts } = activities();
  const state = completedState(key.id);
  const { eventId } = (await acts.announceTerminal({ subject: 'video', id: state.id, keyId: key.id, outcome: 'completed', state })) as { eventId: string };
  const env = new MockActivityEnvironment();
  answer = 503;
  const refused = await env.run(() => acts.deliverWebhook({ eventId })).catch((err: unknown) => err);
  expect(refused).toBeInstanceOf(ApplicationFailure);
  expect((refused as ApplicationFailure).nonRetryable).toBe(false);
  answer = 200;
  expect(await env.run(() => acts.deliverWebhook({ eventId }))).toEqual({ status: 200 });
  // Delivered: a late retry sends nothing more.
  const before = received.length;
  await env.run(() => acts.deliverWebhook({ eventId }));
  expect(received.length).toBe(before);
  const last = received.at(-1)!;
  const event = verifyWebhook(secret!, last.headers, last.body);
  expect(event).toMatchObject({ type: 'video.completed', data: { id: state.id } });
  expect(event.data.video_url).toMatch(/^http:\/\/gateway\.test\/files\/videos\//);
  const [listed] = await store.deliveries(key.id, { limit: 10 });
  expect(listed!.state).toBe('delivered');
  expect(listed!.attempts.map((a) => [a.httpStatus, a.error])).toEqual([
    [503, 'HTTP 503'],
    [200, null],
  ]);
});

test('a target on a private address is refused at every attempt unless allowed, without a request', async () => {
  const key = await keys.issue('private');
  await store.setEndpoint(key.id, null);
  const { acts } = activities({ ...SETTINGS, allowPrivate: false });
  const state = completedState(key.id);
  const { eventId } = (await acts.announceTerminal({
    subject: 'video',
    id: state.id,
    keyId: key.id,
    outcome: 'completed',
    state,
    callbackUrl: receiverUrl,
  })) as {
    eventId: string;
  };
  const before = received.length;
  const err = await new MockActivityEnvironment().run(() => acts.deliverWebhook({ eventId })).catch((e: unknown) => e);
  expect(err).toMatchObject({ type: UNDELIVERABLE, nonRetryable: true });
  expect(received.length).toBe(before);
  const [listed] = await store.deliveries(key.id, { limit: 10 });
  expect(listed!.attempts).toEqual([expect.objectContaining({ httpStatus: null, error: expect.stringMatching(/private/) })]);
});

test('a name that resolves to a private address is refused in the socket lookup (no DNS rebinding gap)', async () => {
  // postWebhook checks no name itself: "localhost" reaches the lookup, whose guard refuses 127.0.0.1.
  const before = received.length;
  const url = `http://localhost:${new URL(receiverUrl).port}/hook`;
  expect(await postWebhook(url, {}, '{}', { allowPrivate: false, timeoutMs: 2000 })).toEqual({ error: 'refusing to call a private address (localhost)' });
  expect(received.length).toBe(before);
  // Allowed, the same call goes through.
  expect(await postWebhook(url, {}, '{}', { allowPrivate: true, timeoutMs: 2000 })).toEqual({ status: 200 });
});
