/**
 * /metrics after a mixed run: text through both SDKs (one channel failing over to another),
 * video tasks that complete and one that fails, a refused rate limit and a bad key. The counts
 * scraped from the API and from the standalone worker (METRICS_ADDRESS) must match what was
 * sent, the credits must match the ledger, the Temporal SDK's own endpoint must answer, and
 * every metric the Grafana dashboard charts must exist on one of the pages.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { parse as parseYaml } from 'yaml';
import { ledgerOf } from '../support/billing';
import { channelsYaml } from '../support/channels-file';
import { createTask, waitForTerminal } from '../support/client';
import { freePort } from '../support/ports';
import { familiesOf, metricNamesIn, scrape, sumOf, type Sample } from '../support/prometheus';
import { ADMIN_TOKEN, e2eEnv, startGateway, type Gateway } from '../support/stack';
import { keyIdByName, usageOf } from '../support/text';

const METRICS_TOKEN = 'metrics-reader-token';
const SONNET = 'cm-sonnet-4.5'; // dead (priority 10, nothing listens) -> live
const MINI = 'gpt-4o-mini';
const VIDEO = 'vidgen3';

let gw: Gateway;
let tmpDir: string;
let workerMetricsUrl: string;
let temporalMetricsUrl: string;
let key: string;
let keyId: string;
let api: Sample[];
let worker: Sample[];
let sdk: Sample[];

function channels(sim: string): string {
  return channelsYaml([
    // Port 1 is never served here: every attempt on it fails to connect.
    { name: 'dead-native', type: 'anthropic-native', baseUrl: 'http://127.0.0.1:1', models: [SONNET], priority: 10 },
    { name: 'live-native', type: 'anthropic-native', baseUrl: sim, models: [SONNET], priority: 0 },
    { name: 'live-openai', type: 'openai-compatible', baseUrl: `${sim}/v1`, models: [MINI], priority: 0 },
    { name: 'veo', type: 'gemini-veo', baseUrl: sim, models: { [VIDEO]: 'veo-3.0-generate-001' }, priority: 0 },
  ]);
}

beforeAll(async () => {
  const { simulatorUrl } = e2eEnv();
  tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'metrics-'));
  const file = path.join(tmpDir, 'channels.yaml');
  fs.writeFileSync(file, channels(simulatorUrl));
  const workerPort = await freePort();
  const sdkPort = await freePort();
  workerMetricsUrl = `http://127.0.0.1:${workerPort}/metrics`;
  temporalMetricsUrl = `http://127.0.0.1:${sdkPort}/metrics`;
  gw = await startGateway({
    env: { CHANNELS_FILE: file, CHANNEL_FAILURE_THRESHOLD: '2', CHANNEL_COOLDOWN_SECONDS: '300', METRICS_TOKEN },
    workerEnv: { METRICS_ADDRESS: `127.0.0.1:${workerPort}`, TEMPORAL_METRICS_ADDRESS: `127.0.0.1:${sdkPort}` },
  });
  key = await gw.issueKey('metrics');
  keyId = await keyIdByName(gw.url, 'metrics');
  const limited = await gw.issueKey('metrics-limited', { rate_limit_rpm: 1 });

  const anthropic = new Anthropic({ apiKey: key, baseURL: gw.url, maxRetries: 0 });
  const openai = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  // 3 messages: the first two fail over from dead-native (which then rests), the third goes straight to live-native.
  for (let i = 0; i < 3; i++) await anthropic.messages.create({ model: SONNET, max_tokens: 16, messages: [{ role: 'user', content: `hello ${i}` }] });
  // 2 streamed chat completions.
  for (let i = 0; i < 2; i++) {
    const stream = await openai.chat.completions.create({ model: MINI, stream: true, messages: [{ role: 'user', content: `stream ${i}` }] });
    for await (const chunk of stream) void chunk;
  }
  // The limited key: one request passes, the second is refused.
  const limitedClient = new OpenAI({ apiKey: limited, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  await limitedClient.models.list();
  await expect(limitedClient.models.list()).rejects.toMatchObject({ status: 429 });
  // A key that does not exist.
  expect((await fetch(`${gw.url}/v1/models`, { headers: { authorization: 'Bearer sk-not-a-key' } })).status).toBe(401);

  // Video: two that complete (one after an upstream 500 on its create), one that fails.
  const tasks = await Promise.all(
    ['a lighthouse at dusk', 'a cat on a wall [sim:submit-5xx=1]', 'a storm [sim:fail]'].map((prompt) => createTask(gw.url, key, { model: VIDEO, prompt })),
  );
  const finals = await Promise.all(tasks.map((t) => waitForTerminal(gw.url, key, t.id, 90_000)));
  expect(finals.map((f) => f.final.status)).toEqual(['completed', 'completed', 'failed']);

  api = await scrape(`${gw.url}/metrics`, METRICS_TOKEN);
  worker = await scrape(workerMetricsUrl);
  sdk = await scrape(temporalMetricsUrl);
}, 240_000);

afterAll(async () => {
  await gw?.stop();
  if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true });
}, 120_000);

test('/metrics needs the metrics token or the admin token', async () => {
  expect((await fetch(`${gw.url}/metrics`)).status).toBe(401);
  expect((await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(401);
  const admin = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  expect(admin.status).toBe(200);
  expect(admin.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
});

test('requests are counted by route pattern, status and key class', () => {
  expect(sumOf(api, 'gateway_http_requests_total', { method: 'POST', route: '/v1/messages', status: '200', key_class: 'unlimited' })).toBe(3);
  expect(sumOf(api, 'gateway_http_requests_total', { method: 'POST', route: '/v1/chat/completions', status: '200', key_class: 'unlimited' })).toBe(2);
  expect(sumOf(api, 'gateway_http_requests_total', { method: 'POST', route: '/v1/video/create', status: '200' })).toBe(3);
  expect(sumOf(api, 'gateway_http_requests_total', { route: '/v1/models', status: '401', key_class: 'none' })).toBe(1);
  expect(sumOf(api, 'gateway_http_requests_total', { route: '/v1/models', status: '429', key_class: 'unlimited' })).toBe(1);
  // Task ids never become label values: the query route is counted under its pattern.
  expect(api.filter((s) => s.name === 'gateway_http_requests_total' && /video_|task_/.test(s.labels.route ?? ''))).toEqual([]);
  expect(sumOf(api, 'gateway_http_request_duration_seconds_count', { method: 'POST', route: '/v1/messages', status_class: '2xx' })).toBe(3);
  expect(sumOf(api, 'gateway_rate_limit_refusals_total', { limit: 'requests_per_minute' })).toBe(1);
});

test('text: upstream attempts, failovers, the cooldown, added latency and first bytes', () => {
  expect(sumOf(api, 'gateway_upstream_requests_total', { channel: 'dead-native', kind: 'text', status: 'network' })).toBe(2);
  expect(sumOf(api, 'gateway_upstream_requests_total', { channel: 'live-native', kind: 'text', status: '200' })).toBe(3);
  expect(sumOf(api, 'gateway_upstream_requests_total', { channel: 'live-openai', kind: 'text', status: '200' })).toBe(2);
  expect(sumOf(api, 'gateway_text_failovers_total', { channel: 'dead-native', reason: 'network' })).toBe(2);
  expect(sumOf(api, 'gateway_channel_cooldowns_total', { channel: 'dead-native' })).toBe(1);
  expect(sumOf(api, 'gateway_channel_resting', { channel: 'dead-native' })).toBe(1);
  expect(sumOf(api, 'gateway_channel_resting', { channel: 'live-native' })).toBe(0);
  expect(sumOf(api, 'gateway_text_added_latency_seconds_count', { endpoint: 'messages', stream: 'false' })).toBe(3);
  expect(sumOf(api, 'gateway_text_added_latency_seconds_count', { endpoint: 'chat', stream: 'true' })).toBe(2);
  expect(sumOf(api, 'gateway_stream_first_byte_seconds_count', { endpoint: 'chat' })).toBe(2);
  expect(sumOf(api, 'gateway_billing_holds_total', { outcome: 'placed' })).toBe(5);
});

test('tasks: created by the API, finished by the worker, with their reasons and completion lag', () => {
  expect(sumOf(api, 'gateway_tasks_created_total', { kind: 'video', model: VIDEO })).toBe(3);
  // A standalone API has no worker in its process: every run goes through the task queue.
  expect(sumOf(api, 'gateway_workflow_starts_total', { eager: 'false' })).toBe(3);
  expect(sumOf(api, 'gateway_workflow_starts_total', { eager: 'true' })).toBe(0);
  expect(sumOf(worker, 'gateway_tasks_finished_total', { kind: 'video', model: VIDEO, outcome: 'completed', reason: 'none' })).toBe(2);
  expect(sumOf(worker, 'gateway_tasks_finished_total', { kind: 'video', model: VIDEO, outcome: 'failed', reason: 'upstream_failed' })).toBe(1);
  expect(sumOf(worker, 'gateway_task_completion_lag_seconds_count')).toBe(2);
  expect(sumOf(worker, 'gateway_upstream_requests_total', { channel: 'veo', kind: 'video', status: '500' })).toBe(1);
  expect(sumOf(worker, 'gateway_upstream_requests_total', { channel: 'veo', kind: 'video', status: '200' })).toBeGreaterThanOrEqual(3 + 3 + 2);
  expect(sumOf(api, 'gateway_tasks_in_flight')).toBe(0);
  expect(sumOf(api, 'gateway_billing_held_credits')).toBe(0);
});

test('charges and refunds add up to the ledger', async () => {
  const ledger = await ledgerOf(gw.url, keyId);
  const videoCharges = ledger.filter((e) => e.kind === 'charge').reduce((a, e) => a - e.amount, 0);
  const refunds = ledger.filter((e) => e.kind === 'refund').reduce((a, e) => a + e.amount, 0);
  expect(sumOf(api, 'gateway_billing_charges_total', { kind: 'video' })).toBe(3);
  expect(sumOf(api, 'gateway_billing_charged_credits_total', { kind: 'video' })).toBe(videoCharges);
  expect(sumOf(worker, 'gateway_billing_refunds_total', { kind: 'video' })).toBe(1);
  expect(sumOf(worker, 'gateway_billing_refunded_credits_total', { kind: 'video' })).toBe(refunds);
  const textPrice = ledger.filter((e) => e.kind === 'usage').reduce((a, e) => a - e.amount, 0);
  expect((await usageOf(gw.url, keyId)).recent).toHaveLength(5);
  expect(sumOf(api, 'gateway_billing_charges_total', { kind: 'text' })).toBe(5);
  expect(sumOf(api, 'gateway_billing_charged_credits_total', { kind: 'text' })).toBe(textPrice);
});

test("the process's own figures and the Temporal SDK's metrics are exported", () => {
  expect(familiesOf(api).has('nodejs_eventloop_lag_seconds')).toBe(true);
  expect(familiesOf(worker).has('nodejs_eventloop_lag_seconds')).toBe(true);
  const sdkFamilies = familiesOf(sdk);
  expect([...sdkFamilies].some((n) => n.startsWith('temporal_'))).toBe(true);
  expect(sdkFamilies.has('temporal_workflow_task_execution_latency')).toBe(true);
});

test('every metric the Grafana dashboard and the alert rules name exists', () => {
  const docs = path.join(__dirname, '../../docs');
  const dashboard = JSON.parse(fs.readFileSync(path.join(docs, 'grafana-dashboard.json'), 'utf8')) as {
    panels: { title: string; targets?: { expr: string }[] }[];
  };
  const rules = (
    parseYaml(fs.readFileSync(path.join(docs, 'prometheus-alerts.yml'), 'utf8')) as { groups: { rules: { alert: string; expr: string }[] }[] }
  ).groups.flatMap((g) => g.rules);
  const exported = new Set([...familiesOf(api), ...familiesOf(worker), ...familiesOf(sdk)]);
  const named = [
    ...dashboard.panels.flatMap((p) => (p.targets ?? []).flatMap((t) => metricNamesIn(t.expr).map((name) => ({ where: p.title, name })))),
    ...rules.flatMap((r) => metricNamesIn(r.expr).map((name) => ({ where: r.alert, name }))),
  ];
  expect(named.length).toBeGreaterThan(20);
  expect(named.filter((n) => !exported.has(n.name))).toEqual([]);
});
