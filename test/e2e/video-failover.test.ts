/**
 * Video failover on the real stack (README "Video failover"), driven through the official
 * `openai` SDK: two channels serve each model (CHANNELS_FILE). A first channel that answers 503
 * to every submit (a tiny HTTP server in this file) -> the task completes on the second, one
 * upstream job in all, the failover in its timeline and the operators' task list, billed once.
 * A first channel that takes the job but loses the answer (`[sim:drop-after-create]`) -> the
 * keyed retry gets that job back: one job, no failover.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { call } from '../support/client';
import { taskEntries } from '../support/billing';
import { ADMIN_TOKEN, e2eEnv, startGateway, type Gateway } from '../support/stack';

/** motion-2: `down` (priority 10, 503 to everything) -> `live` (the simulator). */
const FAILING_OVER = 'motion-2';
/** motion-2-pro: `lossy` (priority 10, the simulator, which honours Idempotency-Key) -> `spare` (the simulator). */
const RESOLVED = 'motion-2-pro';

let gw: Gateway;
let key: string;
let keyId: string;
let openai: OpenAI;
let tmpDir: string;
let down: http.Server;
/** Every request the 503 channel was sent. */
const downRequests: string[] = [];

function channelsYaml(sim: string, deadUrl: string): string {
  const ch = (name: string, baseUrl: string, model: string, priority: number, extra = '') =>
    `  - name: ${name}\n    type: openai-videos\n    base_url: ${baseUrl}\n    api_key: sim-key\n    models: { ${model}: ${model === FAILING_OVER ? 'sora-2' : 'sora-2-pro'} }\n    priority: ${priority}\n${extra}`;
  return `channels:\n${[
    ch('down', deadUrl, FAILING_OVER, 10, '    submit_attempts: 2\n'),
    ch('live', sim, FAILING_OVER, 0),
    ch('lossy', sim, RESOLVED, 10, '    submit_attempts: 3\n'),
    ch('spare', sim, RESOLVED, 0),
  ].join('')}`;
}

beforeAll(async () => {
  down = http.createServer((req, res) => {
    downRequests.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () =>
      res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'Service Unavailable (test channel)' } })),
    );
  });
  await new Promise<void>((resolve) => down.listen(0, '127.0.0.1', resolve));
  tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'video-failover-'));
  const file = path.join(tmpDir, 'channels.yaml');
  fs.writeFileSync(file, channelsYaml(e2eEnv().simulatorUrl, `http://127.0.0.1:${(down.address() as AddressInfo).port}`));
  gw = await startGateway({ env: { CHANNELS_FILE: file, UPSTREAM_RETRY_INITIAL_MS: '100', UPSTREAM_RETRY_MAX_MS: '400' } });
  ({ id: keyId, key } = await gw.issueKeyWithId('failover', { quota: 100_000_000 }));
  openai = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await new Promise((resolve) => (down ? down.close(resolve) : resolve(undefined)));
  if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true });
}, 120_000);

const unique = () => Math.random().toString(36).slice(2, 10);

/** Retrieves the video through the SDK until it is completed or failed. */
async function finished(id: string): Promise<OpenAI.Video> {
  for (let i = 0; i < 600; i++) {
    const video = await openai.videos.retrieve(id);
    if (video.status === 'completed' || video.status === 'failed') return video;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`video ${id} did not finish`);
}

async function simJobs(prompt: string): Promise<{ id: string; idempotencyKey: string | null }[]> {
  const res = await call<{ data: { id: string; idempotencyKey: string | null }[] }>(`${gw.simulatorUrl}/_sim/jobs?prompt=${encodeURIComponent(prompt)}`);
  expect(res.status).toBe(200);
  return res.body.data;
}

interface AdminTask {
  id: string;
  channel: string | null;
  upstream_job_id: string | null;
  failovers: { from: string; to: string; reason: string; at: number }[];
}

async function adminTask(id: string): Promise<AdminTask | undefined> {
  const res = await call<{ data: AdminTask[] }>(`${gw.url}/admin/tasks?key_id=${keyId}&limit=100`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  expect(res.status).toBe(200);
  return res.body.data.find((t) => t.id === id);
}

async function timeline(id: string): Promise<{ event: string; detail: string | null }[]> {
  const res = await call<{ data: { event: string; detail: string | null }[] }>(`${gw.url}/v1/videos/${id}/timeline`, { key });
  expect(res.status).toBe(200);
  return res.body.data;
}

test('a first channel that answers 503 to every submit: the task completes on the second, one upstream job, billed once', async () => {
  const prompt = `failover ${unique()} [sim:ms=300]`;
  const created = await openai.videos.create({ model: FAILING_OVER as OpenAI.VideoModel, prompt, seconds: '8', size: '1280x720' });
  const video = await finished(created.id);
  expect(video.status).toBe('completed');

  // The 503 channel was tried (its submit_attempts: 2) and made nothing; the simulator made one job.
  expect(downRequests.filter((r) => r === 'POST /v1/videos')).toHaveLength(2);
  const jobs = await simJobs(prompt);
  expect(jobs).toHaveLength(1);
  expect(jobs[0]?.idempotencyKey).toBe(`${created.id}:submit`);

  const task = await adminTask(created.id);
  expect(task).toMatchObject({ channel: 'live', failovers: [{ from: 'down', to: 'live', reason: expect.stringMatching(/HTTP 503/) }] });
  // The provider's own id of the job, for an operator to quote to it.
  expect(task!.upstream_job_id).toBe(jobs[0]!.id);
  expect(Math.abs(task!.failovers[0]!.at - Date.now() / 1000)).toBeLessThan(120);

  const events = await timeline(created.id);
  const names = events.map((e) => e.event);
  expect(names.indexOf('failover')).toBeGreaterThan(names.indexOf('created'));
  expect(names.indexOf('failover')).toBeLessThan(names.indexOf('submitted'));
  expect(events.find((e) => e.event === 'failover')?.detail).toMatch(/^down -> live: .*HTTP 503/);
  // The prompt is never part of what the timeline shows.
  for (const e of events) expect(e.detail ?? '').not.toContain(prompt);

  // Charged once, never refunded.
  const entries = await taskEntries(gw.url, keyId, created.id);
  expect(entries).toHaveLength(1);
  expect(entries[0]).toMatch(/^charge:-\d+/);

  const file = await fetch((video as unknown as { video_url: string }).video_url);
  expect(file.status).toBe(200);
}, 120_000);

test('a first channel that takes the job but loses its answer: the keyed retry gets the job back, one job, no failover', async () => {
  const prompt = `lost answer ${unique()} [sim:drop-after-create=1] [sim:ms=300]`;
  const created = await openai.videos.create({ model: RESOLVED as OpenAI.VideoModel, prompt, seconds: '8', size: '1280x720' });
  const video = await finished(created.id);
  expect(video.status).toBe('completed');

  const jobs = await simJobs(prompt);
  expect(jobs).toHaveLength(1);
  expect(jobs[0]?.idempotencyKey).toBe(`${created.id}:submit`);

  const task = await adminTask(created.id);
  expect(task).toMatchObject({ channel: 'lossy', failovers: [] });
  expect((await timeline(created.id)).map((e) => e.event)).not.toContain('failover');
  const entries = await taskEntries(gw.url, keyId, created.id);
  expect(entries).toHaveLength(1);
}, 120_000);
