/**
 * Completion webhooks on the real stack (API and worker processes, Temporal, the simulator) with
 * a real HTTPS receiver in the test (a certificate made for 127.0.0.1, trusted by the gateway
 * through NODE_EXTRA_CA_CERTS; plain http stays refused): it refuses the first deliveries (500), then is down (its port
 * closed) for a while and comes back; every event arrives, exactly one per terminal task, each
 * verified by the README's own snippet (docs/snippets/verify-webhook.cjs), which refuses a
 * tampered body or signature. Also: callback_url over the key's endpoint, cancelled tasks,
 * rotation (two signatures, both verifying), the attempts in the admin and key views, and the
 * create-time checks of callback_url.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { projectRoot } from '../../src/config/paths';
import { call, createTask, waitForTerminal } from '../support/client';
import { freePort, waitFor } from '../support/ports';
import { ADMIN_TOKEN, startGateway, type Gateway } from '../support/stack';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { verifyWebhook } = require(path.join(projectRoot(), 'docs', 'snippets', 'verify-webhook.cjs')) as {
  verifyWebhook: (secret: string, headers: Record<string, string>, body: string, now?: number) => WebhookEvent;
};

interface WebhookEvent {
  type: string;
  timestamp: string;
  data: { id: string; status: string; video_url?: string | null; error?: { code: string } };
}

interface Delivery {
  path: string;
  headers: Record<string, string>;
  body: string;
  answered: number;
}

interface DeliveryList {
  object: 'list';
  key_id: string;
  data: {
    id: string;
    type: string;
    subject_id: string;
    state: string;
    attempts: { attempt: number; http_status: number | null; error: string | null }[];
  }[];
}

/**
 * The receiver: answers 500 to the first `refuseNext` deliveries, 200 after; keeps every
 * delivery (with the status it answered) and the accepted events by id (its deduplication).
 */
class Receiver {
  deliveries: Delivery[] = [];
  refuseNext = 0;
  private server: https.Server | null = null;

  constructor(
    readonly port: number,
    private readonly tls: { key: Buffer; cert: Buffer },
  ) {}

  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  async up(): Promise<void> {
    this.server = https.createServer(this.tls, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : (v ?? '')]));
        const answered = this.refuseNext > 0 ? 500 : 200;
        if (this.refuseNext > 0) this.refuseNext--;
        this.deliveries.push({ path: req.url ?? '', headers, body: Buffer.concat(chunks).toString('utf8'), answered });
        res.writeHead(answered).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
  }

  /** Down: the port closed, so deliveries meet a refused connection. */
  async down(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Each accepted (2xx) delivery of this event id. */
  accepted(id: string): Delivery[] {
    return this.deliveries.filter((d) => d.answered === 200 && d.headers['webhook-id'] === id);
  }

  /** The accepted events, deduplicated by webhook-id. */
  acceptedIds(): Set<string> {
    return new Set(this.deliveries.filter((d) => d.answered === 200).map((d) => d.headers['webhook-id']!));
  }
}

let gw: Gateway;
let receiver: Receiver;
let strictApi: string;

const admin = (p: string, init: { method?: string; json?: unknown } = {}) =>
  call<Record<string, unknown>>(`${gw.url}${p}`, { ...init, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });

/** A self-signed certificate for 127.0.0.1: the receiver serves it, the gateway's processes trust it. */
function selfSignedCertificate(): { key: Buffer; cert: Buffer; certFile: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-webhook-tls-'));
  const [keyFile, certFile] = [path.join(dir, 'key.pem'), path.join(dir, 'cert.pem')];
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    {
      stdio: 'ignore',
    },
  );
  return { key: fs.readFileSync(keyFile), cert: fs.readFileSync(certFile), certFile };
}

beforeAll(async () => {
  const tls = selfSignedCertificate();
  receiver = new Receiver(await freePort(), tls);
  await receiver.up();
  gw = await startGateway({
    env: {
      NODE_EXTRA_CA_CERTS: tls.certFile,
      // The receiver is on loopback: allowed here only (https is still required).
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_INITIAL_MS: '200',
      WEBHOOK_RETRY_MAX_MS: '800',
      WEBHOOK_TIMEOUT_MS: '3000',
    },
  });
  // A replica with the defaults: no private targets.
  strictApi = await gw.startApiReplica({ WEBHOOK_ALLOW_PRIVATE: 'false' });
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await receiver?.down();
}, 120_000);

/** A key with its webhook endpoint set (its secret made by that call). */
async function keyWithEndpoint(name: string, url: string | null): Promise<{ id: string; key: string; secret: string }> {
  const { id, key } = await gw.issueKeyWithId(name);
  const set = await admin(`/admin/keys/${id}/webhook`, { method: 'PUT', json: { url } });
  expect(set.status).toBe(200);
  const secret = set.body.secret as string;
  expect(secret).toMatch(/^whsec_/);
  expect(set.body).toMatchObject({ object: 'webhook_endpoint', key_id: id, url, secret_hint: `whsec_...${secret.slice(-4)}` });
  return { id, key, secret };
}

async function createVideosTask(key: string, fields: Record<string, string>): Promise<{ id: string }> {
  const form = new FormData();
  for (const [k, v] of Object.entries({ model: 'motion-2', seconds: '4', size: '480x480', ...fields })) form.set(k, v);
  const res = await fetch(`${gw.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  const body = (await res.json()) as { id: string };
  if (res.status !== 200) throw new Error(`create: HTTP ${res.status} ${JSON.stringify(body)}`);
  return body;
}

/** The accepted delivery of the event whose id starts so, once it has arrived. */
const arrivedEvent = (eventId: string) =>
  waitFor(`the event ${eventId}`, async () => receiver.deliveries.find((d) => d.answered === 200 && d.headers['webhook-id']?.startsWith(eventId)), 60_000, 50);

/** The accepted delivery of the event about this video task, once it has arrived. */
const arrived = (taskId: string) => arrivedEvent(`evt_video_${taskId}_`);

test('every event arrives once with a valid signature though the receiver refuses the first deliveries; one event per task', async () => {
  const { id: keyId, key, secret } = await keyWithEndpoint('wh-refused', `${receiver.url}/key-endpoint`);
  receiver.refuseNext = 4;
  const ok = await createTask(gw.url, key, { model: 'vidgen3', prompt: 'webhook ok [sim:ms=300]' });
  const failed = await createTask(gw.url, key, { model: 'vidgen3', prompt: 'webhook fail [sim:ms=300] [sim:fail]' });
  // callback_url wins over the key's endpoint, on the /v1/videos family.
  const motion = await createVideosTask(key, { prompt: 'webhook motion [sim:ms=300]', callback_url: `${receiver.url}/per-request` });

  const finalOk = (await waitForTerminal(gw.url, key, ok.id)).final;
  expect(finalOk.status).toBe('completed');
  expect((await waitForTerminal(gw.url, key, failed.id)).final.status).toBe('failed');
  const [dOk, dFailed, dMotion] = await Promise.all([arrived(ok.id), arrived(failed.id), arrived(motion.id)]);

  // Verified by the README's snippet, each the event of its task, as its status endpoint shows it.
  const eOk = verifyWebhook(secret, dOk.headers, dOk.body);
  expect(eOk).toMatchObject({ type: 'video.completed', data: { id: ok.id, status: 'completed', enhanced_prompt: finalOk.enhanced_prompt } });
  expect(eOk.data.video_url).toMatch(/\/files\/videos\//);
  expect((await fetch(eOk.data.video_url!)).status).toBe(200);
  expect(verifyWebhook(secret, dFailed.headers, dFailed.body)).toMatchObject({ type: 'video.failed', data: { id: failed.id, status: 'failed' } });
  const eMotion = verifyWebhook(secret, dMotion.headers, dMotion.body);
  expect(eMotion).toMatchObject({ type: 'video.completed', data: { id: motion.id, status: 'completed', model: 'motion-2', size: '480x480' } });
  expect(dMotion.path).toBe('/per-request');
  expect(dOk.path).toBe('/key-endpoint');

  // The refusals were retried: 4 refused deliveries, then each event accepted exactly once.
  expect(receiver.deliveries.filter((d) => d.answered === 500)).toHaveLength(4);
  for (const d of [dOk, dFailed, dMotion]) expect(receiver.accepted(d.headers['webhook-id']!)).toHaveLength(1);

  // A tampered body or signature of a real delivery is refused by the same snippet.
  expect(() => verifyWebhook(secret, dOk.headers, dOk.body.replace('"completed"', '"failed"'))).toThrow('no valid webhook signature');
  const sig = dOk.headers['webhook-signature']!;
  const tampered = `${sig.slice(0, -6)}${sig.slice(-6, -5) === 'A' ? 'B' : 'A'}${sig.slice(-5)}`;
  expect(() => verifyWebhook(secret, { ...dOk.headers, 'webhook-signature': tampered }, dOk.body)).toThrow('no valid webhook signature');

  // One event per task, each delivered (recorded once the receiver's 200 is in), with its attempts visible to the operator...
  const events = await waitFor(
    'the deliveries recorded',
    async () => {
      const data = ((await admin(`/admin/keys/${keyId}/webhook/deliveries`)).body as unknown as DeliveryList).data;
      return data.length === 3 && data.every((e) => e.state === 'delivered') ? data : null;
    },
    10_000,
    100,
  );
  expect(events.map((e) => e.subject_id).sort()).toEqual([ok.id, failed.id, motion.id].sort());
  const attempts = events.flatMap((e) => e.attempts);
  expect(attempts.filter((a) => a.http_status === 500)).toHaveLength(4);
  expect(attempts.filter((a) => a.http_status === 200)).toHaveLength(3);
  // ... and to the key itself, per event.
  const own = await call<DeliveryList>(`${gw.url}/v1/webhooks/deliveries?event_id=${encodeURIComponent(dOk.headers['webhook-id']!)}`, { key });
  expect(own.status).toBe(200);
  expect(own.body.data).toHaveLength(1);
  expect(own.body.data[0]).toMatchObject({ id: dOk.headers['webhook-id'], type: 'video.completed', state: 'delivered' });
  // Another key sees none of them.
  const other = await gw.issueKey('wh-other');
  expect((await call<DeliveryList>(`${gw.url}/v1/webhooks/deliveries`, { key: other })).body.data).toEqual([]);
}, 120_000);

test('a receiver that is down for a while gets the event once it is back, though the worker was killed meanwhile', async () => {
  const { id: keyId, key, secret } = await keyWithEndpoint('wh-down', `${receiver.url}/down`);
  await receiver.down();
  const task = await createTask(gw.url, key, { model: 'vidgen3', prompt: 'webhook while down [sim:ms=300]' });
  await waitForTerminal(gw.url, key, task.id);
  // Several attempts meet the closed port.
  const refused = await waitFor(
    'failed attempts while the receiver is down',
    async () => {
      const events = ((await admin(`/admin/keys/${keyId}/webhook/deliveries`)).body as unknown as DeliveryList).data;
      const attempts = events[0]?.attempts ?? [];
      return attempts.length >= 3 ? attempts : null;
    },
    60_000,
    100,
  );
  expect(refused.every((a) => a.http_status === null && /ECONNREFUSED/.test(a.error ?? ''))).toBe(true);
  // The delivery is durable: the worker dies (SIGKILL) while the receiver is still down, the
  // receiver comes back, a new worker picks the retries up.
  await gw.killWorker();
  await receiver.up();
  await gw.startWorker();
  const delivery = await arrived(task.id);
  expect(verifyWebhook(secret, delivery.headers, delivery.body)).toMatchObject({ type: 'video.completed', data: { id: task.id } });
  expect(receiver.accepted(delivery.headers['webhook-id']!)).toHaveLength(1);
  // The record follows the receiver's answer: the delivery step writes it once the 200 is in.
  const events = await waitFor(
    'the delivery recorded',
    async () => {
      const data = ((await admin(`/admin/keys/${keyId}/webhook/deliveries`)).body as unknown as DeliveryList).data;
      return data[0]?.state === 'delivered' ? data : null;
    },
    10_000,
    100,
  );
  expect(events).toHaveLength(1);
  expect(events[0]!.attempts.at(-1)).toMatchObject({ http_status: 200, error: null });
}, 120_000);

test('a rotated secret: deliveries carry both signatures, each verifying; a cancelled task sends video.cancelled', async () => {
  const { id: keyId, key, secret: first } = await keyWithEndpoint('wh-rotate', `${receiver.url}/rotate`);
  const rotated = await admin(`/admin/keys/${keyId}/webhook/rotate`, { method: 'POST' });
  expect(rotated.status).toBe(200);
  const second = rotated.body.secret as string;
  expect(second).toMatch(/^whsec_/);
  expect(second).not.toBe(first);
  expect(rotated.body.previous_secret_expires_at).toEqual(expect.any(Number));
  // Read back: only the hint, never the secret.
  const read = await admin(`/admin/keys/${keyId}/webhook`);
  expect(JSON.stringify(read.body)).not.toContain(second.slice(6));
  expect(read.body).toMatchObject({ url: `${receiver.url}/rotate`, secret_hint: `whsec_...${second.slice(-4)}` });

  const running = await createVideosTask(key, { prompt: 'webhook cancelled [sim:ms=120000] [sim:cancellable]' });
  await waitFor(
    'the task to run',
    async () => (await call<{ status: string }>(`${gw.url}/v1/videos/${running.id}`, { key })).body.status === 'processing',
    30_000,
    100,
  );
  expect((await call(`${gw.url}/v1/videos/${running.id}`, { key, method: 'DELETE' })).status).toBe(200);
  const delivery = await arrived(running.id);
  expect(delivery.headers['webhook-signature']!.split(' ')).toHaveLength(2);
  for (const secret of [first, second]) {
    expect(verifyWebhook(secret, delivery.headers, delivery.body)).toMatchObject({
      type: 'video.cancelled',
      data: { id: running.id, status: 'failed', error: { code: 'cancelled' } },
    });
  }
  expect(delivery.headers['webhook-id']).toBe(`evt_video_${running.id}_cancelled`);

  // Cleared: the key's endpoint is gone, its secret stays (for callback_url).
  const cleared = await admin(`/admin/keys/${keyId}/webhook`, { method: 'DELETE' });
  expect(cleared.body).toMatchObject({ url: null, secret_hint: `whsec_...${second.slice(-4)}` });
}, 120_000);

test('callback_url is checked at create: scheme, private addresses, a key without a secret; the admin url too', async () => {
  const { id: keyId, key } = await keyWithEndpoint('wh-checks', null);
  const create = (base: string, k: string, callbackUrl: string) =>
    call<{ error: { code: string; param: string; message: string } }>(`${base}/v1/video/create`, {
      key: k,
      json: { model: 'vidgen3', prompt: 'checked', callback_url: callbackUrl },
    });
  const refusals = [
    await create(gw.url, key, 'http://hooks.example.com/x'),
    await create(strictApi, key, 'https://127.0.0.1/x'),
    await create(strictApi, key, 'https://localhost/x'),
    await create(gw.url, key, 'ftp://hooks.example.com/x'),
    await create(gw.url, key, 'not a url'),
  ];
  for (const r of refusals) {
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'invalid_callback_url', param: 'callback_url' });
  }
  expect(refusals[0]!.body.error.message).toMatch(/https/);
  expect(refusals[1]!.body.error.message).toMatch(/private/);

  // A key with no secret cannot name a callback_url: nobody could verify its events.
  const bare = await gw.issueKey('wh-bare');
  const noSecret = await create(gw.url, bare, `${receiver.url}/x`);
  expect(noSecret.status).toBe(400);
  expect(noSecret.body.error.code).toBe('webhook_secret_missing');

  // The admin endpoint refuses what a create would.
  const badAdmin = await call<{ error: { code: string } }>(`${strictApi}/admin/keys/${keyId}/webhook`, {
    method: 'PUT',
    json: { url: 'https://10.0.0.1/hook' },
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  expect(badAdmin.status).toBe(400);
  expect(badAdmin.body.error.code).toBe('invalid_webhook_url');
  expect((await admin('/admin/keys/key_nope/webhook')).status).toBe(404);
  // Nothing was made by the refused requests.
  expect(((await admin(`/admin/keys/${keyId}/webhook/deliveries`)).body as unknown as DeliveryList).data).toEqual([]);
}, 60_000);

test("background responses: the request's callback_url gets response.completed (the Response as GET returns it), the key's endpoint response.cancelled; refused deliveries retried", async () => {
  const { id: keyId, key, secret } = await keyWithEndpoint('wh-responses', `${receiver.url}/responses-key`);
  const openai = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  receiver.refuseNext = 2;
  const params = { model: 'o3-pro', input: 'Hook me [sim:ms=800]', background: true, callback_url: `${receiver.url}/responses-callback` };
  const created = await openai.responses.create(params as OpenAI.Responses.ResponseCreateParamsNonStreaming);
  const delivery = await arrivedEvent(`evt_response_${created.id}_completed`);
  expect(delivery.path).toBe('/responses-callback');
  const event = verifyWebhook(secret, delivery.headers, delivery.body) as unknown as { type: string; data: OpenAI.Responses.Response };
  expect(event.type).toBe('response.completed');
  // output_text is the SDK's own convenience, added to what it reads.
  const { output_text: text, ...read } = await openai.responses.retrieve(created.id);
  expect(event.data).toEqual(read);
  expect(text).toContain('Hook me');

  const long = await openai.responses.create({ model: 'o3-pro', input: 'Cancel me [sim:ms=30000]', background: true });
  await openai.responses.cancel(long.id);
  const cancelled = await arrivedEvent(`evt_response_${long.id}_cancelled`);
  expect(cancelled.path).toBe('/responses-key');
  expect(verifyWebhook(secret, cancelled.headers, cancelled.body)).toMatchObject({ type: 'response.cancelled', data: { id: long.id, status: 'cancelled' } });
  const events = ((await admin(`/admin/keys/${keyId}/webhook/deliveries`)).body as unknown as DeliveryList).data;
  expect(events.map((e) => e.type).sort()).toEqual(['response.cancelled', 'response.completed']);
  expect(events.find((e) => e.type === 'response.completed')!.attempts.map((a) => a.http_status)).toEqual([500, 500, 200]);
}, 90_000);

test('a video chat completion takes callback_url too: its task announces video.completed there', async () => {
  const { key, secret } = await keyWithEndpoint('wh-chat', `${receiver.url}/chat-key`);
  const res = await call<{ choices: { message: { content: string } }[] }>(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    json: { model: 'motion-2', messages: [{ role: 'user', content: 'a kite [sim:ms=500]' }], callback_url: `${receiver.url}/chat-callback` },
  });
  expect(res.status).toBe(200);
  const taskId = /task_id: (\S+)/.exec(res.body.choices[0]!.message.content)?.[1];
  expect(taskId).toBeDefined();
  const delivery = await arrived(taskId!);
  expect(delivery.path).toBe('/chat-callback');
  expect(verifyWebhook(secret, delivery.headers, delivery.body)).toMatchObject({ type: 'video.completed', data: { id: taskId, status: 'completed' } });
}, 60_000);
