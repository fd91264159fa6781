/**
 * Standard Webhooks signing against the published reference vector, the README's verifying
 * snippet against what the gateway signs (and a tampered body or signature refused by it), and
 * the webhook target checks.
 */
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../src/config/paths';
import { eventId } from '../../src/webhooks/event';
import { newWebhookSecret, signedHeaders, signV1 } from '../../src/webhooks/signing';
import { webhookUrlProblem } from '../../src/webhooks/target-url';

const SNIPPET = path.join(projectRoot(), 'docs', 'snippets', 'verify-webhook.cjs');
// The README's own snippet, the file the tests run (it must be the same text).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { verifyWebhook } = require(SNIPPET) as { verifyWebhook: (secret: string, headers: Record<string, string>, body: string, now?: number) => unknown };

// From the Standard Webhooks reference implementations' tests.
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

test('signing reproduces the Standard Webhooks reference vector', () => {
  expect(signV1(VECTOR.secret, VECTOR.id, VECTOR.timestamp, VECTOR.body)).toBe(VECTOR.signature);
  // The whsec_ prefix is optional, as in the reference libraries.
  expect(signV1(VECTOR.secret.slice('whsec_'.length), VECTOR.id, VECTOR.timestamp, VECTOR.body)).toBe(VECTOR.signature);
});

test("the README's snippet verifies the reference vector and what the gateway signs, with either secret while rotating", () => {
  const vectorHeaders = { 'webhook-id': VECTOR.id, 'webhook-timestamp': String(VECTOR.timestamp), 'webhook-signature': VECTOR.signature };
  expect(verifyWebhook(VECTOR.secret, vectorHeaders, VECTOR.body, VECTOR.timestamp * 1000)).toEqual({ test: 2432232314 });
  const [current, previous] = [newWebhookSecret(), newWebhookSecret()];
  expect(current).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  const body = JSON.stringify({ type: 'video.completed', timestamp: new Date().toISOString(), data: { id: 'video_1' } });
  const now = Date.now();
  const headers = { ...signedHeaders([current, previous], 'evt_video_video_1_completed', Math.floor(now / 1000), body) };
  expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
  expect(verifyWebhook(current, headers, body, now)).toMatchObject({ type: 'video.completed' });
  expect(verifyWebhook(previous, headers, body, now)).toMatchObject({ type: 'video.completed' });
});

test("the README's snippet refuses a tampered body, a tampered signature, another secret and an old timestamp", () => {
  const secret = newWebhookSecret();
  const body = '{"type":"video.failed","data":{"id":"video_2"}}';
  const now = Date.now();
  const headers = { ...signedHeaders([secret], 'evt_1', Math.floor(now / 1000), body) };
  expect(() => verifyWebhook(secret, headers, body.replace('failed', 'completed'), now)).toThrow('no valid webhook signature');
  const sig = headers['webhook-signature'];
  const flipped = `v1,${sig.slice(3, 10)}${sig[10] === 'A' ? 'B' : 'A'}${sig.slice(11)}`;
  expect(() => verifyWebhook(secret, { ...headers, 'webhook-signature': flipped }, body, now)).toThrow('no valid webhook signature');
  expect(() => verifyWebhook(newWebhookSecret(), headers, body, now)).toThrow('no valid webhook signature');
  expect(() => verifyWebhook(secret, { ...headers, 'webhook-id': 'evt_2' }, body, now)).toThrow('no valid webhook signature');
  expect(() => verifyWebhook(secret, headers, body, now + 10 * 60_000)).toThrow('timestamp');
  expect(() => verifyWebhook(secret, { ...headers, 'webhook-signature': '' }, body, now)).toThrow('missing');
});

test('the README carries the verifying snippet the tests run, verbatim', () => {
  const readme = fs.readFileSync(path.join(projectRoot(), 'README.md'), 'utf8');
  expect(readme).toContain(fs.readFileSync(SNIPPET, 'utf8').trimEnd());
});

test('event ids are derived from the subject and its outcome', () => {
  expect(eventId('video', 'video_abc', 'completed')).toBe('evt_video_video_abc_completed');
  expect(eventId('video', 'video_abc', 'completed')).not.toBe(eventId('video', 'video_abc', 'failed'));
});

test('webhook targets: https on a public host unless the operator allows more', () => {
  const strict = { allowHttp: false, allowPrivate: false };
  expect(webhookUrlProblem('https://hooks.example.com/x', strict)).toBeNull();
  expect(webhookUrlProblem('http://hooks.example.com/x', strict)).toMatch(/https/);
  expect(webhookUrlProblem('https://127.0.0.1/x', strict)).toMatch(/private/);
  expect(webhookUrlProblem('https://[::1]/x', strict)).toMatch(/private/);
  expect(webhookUrlProblem('https://localhost:8443/x', strict)).toMatch(/private/);
  expect(webhookUrlProblem('https://10.1.2.3/x', strict)).toMatch(/private/);
  expect(webhookUrlProblem('https://user:pw@hooks.example.com/x', strict)).toMatch(/credentials/);
  expect(webhookUrlProblem('not a url', strict)).toMatch(/valid URL/);
  expect(webhookUrlProblem('ftp://hooks.example.com/x', { allowHttp: true, allowPrivate: true })).toMatch(/http/);
  expect(webhookUrlProblem('http://127.0.0.1:9/x', { allowHttp: true, allowPrivate: true })).toBeNull();
});
