/**
 * A channel that polls by list (`poll_by_list: true`), on the real stack (API and worker
 * processes, PostgreSQL, the Temporal dev server) in front of a provider simulator of its own:
 * running jobs are read from `GET /v1/videos` pages, never one request per job, and the tasks
 * still show monotonic progress, complete, fail with their provider's reason, and cancel (the
 * cancelled step leaving the poller's next sweep), with a history whose length does not grow
 * with the job's. A gate in front of the simulator makes the list fail: a provider that
 * refuses it is polled job by job from its first refusal on, and a list outage only delays
 * the polls it failed.
 */
import { Client, Connection } from '@temporalio/client';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startSimulator, type RunningSimulator } from '../../simulator/server';
import { auditMismatches } from '../support/billing';
import { channelsYaml, type ChannelEntry } from '../support/channels-file';
import { call, createTask, waitForTerminal } from '../support/client';
import { freePort, waitFor } from '../support/ports';
import { scrape, sumOf } from '../support/prometheus';
import { e2eEnv, startGateway, type Gateway } from '../support/stack';

const POLL_MS = 200;
const JOB_MS = 3000;
const TASKS = 6;

type ListAnswer = 'pass' | 'outage' | 'refuse';

/**
 * The channels reach the simulator through this gate, each under a path of its own
 * (`/listed`, `/refusing`): it passes every request on, except the list (`GET /v1/videos`),
 * which it answers as `lists` says for that channel, counting each.
 */
const lists: Record<string, { answer: ListAnswer; requests: number }> = {
  listed: { answer: 'pass', requests: 0 },
  refusing: { answer: 'refuse', requests: 0 },
};

function startListGate(target: string): Promise<http.Server> {
  const upstream = new URL(target);
  const server = http.createServer((req, res) => {
    const [, name = '', rest = ''] = /^\/(\w+)(\/.*)$/.exec(req.url ?? '') ?? [];
    const list = lists[name];
    if (!list) {
      res.writeHead(404).end();
      return;
    }
    if (req.method === 'GET' && /^\/v1\/videos(\?|$)/.test(rest)) {
      list.requests++;
      const error = (status: number, message: string, headers: Record<string, string> = {}) =>
        res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify({ error: { message, type: 'invalid_request_error' } }));
      if (list.answer === 'refuse') return error(404, 'Unknown request URL: GET /v1/videos.');
      if (list.answer === 'outage') return error(503, 'The server is overloaded.', { 'retry-after': '1' });
    }
    const forward = http.request(
      { host: upstream.hostname, port: upstream.port, path: rest, method: req.method, headers: { ...req.headers, host: upstream.host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

let sim: RunningSimulator;
let gate: http.Server;
let temporal: Client;
let gw: Gateway;
let key: string;
let workerMetricsUrl: string;
let tmpDir: string;

interface SimStats {
  requests: Record<string, number>;
}

const simStats = async (): Promise<SimStats> => (await call<SimStats>(`${sim.url}/_sim/stats`)).body;

beforeAll(async () => {
  sim = await startSimulator({ jobMs: JOB_MS, apiKey: 'sim-key' });
  gate = await startListGate(sim.url);
  const gateUrl = `http://127.0.0.1:${(gate.address() as AddressInfo).port}`;
  temporal = new Client({ connection: await Connection.connect({ address: e2eEnv().temporalAddress }) });
  tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'poll-by-list-'));
  const file = path.join(tmpDir, 'channels.yaml');
  const listed = (name: string, models: Record<string, string>): ChannelEntry => ({
    name,
    type: 'openai-videos',
    baseUrl: `${gateUrl}/${name}`,
    models,
    settings: { poll_ms: POLL_MS, expected_job_seconds: 3, poll_by_list: true },
  });
  fs.writeFileSync(file, channelsYaml([listed('listed', { 'motion-2': 'sora-2' }), listed('refusing', { 'motion-2-pro': 'sora-2-pro' })]));
  const workerPort = await freePort();
  workerMetricsUrl = `http://127.0.0.1:${workerPort}/metrics`;
  gw = await startGateway({ env: { CHANNELS_FILE: file }, workerEnv: { METRICS_ADDRESS: `127.0.0.1:${workerPort}` } });
  key = await gw.issueKey('poll-by-list');
}, 120_000);

afterAll(async () => {
  if (gw) expect(await auditMismatches(gw.url)).toEqual([]);
  await gw?.stop();
  await temporal?.connection.close();
  await new Promise((resolve) => (gate ? gate.close(resolve) : resolve(undefined)));
  await sim?.close();
  if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true });
}, 120_000);

interface VideoObject {
  status: string;
  progress: number;
}

/** Reads a task (GET /v1/videos/{id}) every 100 ms until it ends; the progress each read showed, in order. */
async function progressUntilTerminal(id: string): Promise<{ status: string; progress: number[] }> {
  const progress: number[] = [];
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const res = await call<VideoObject>(`${gw.url}/v1/videos/${encodeURIComponent(id)}`, { key });
    expect(res.status).toBe(200);
    progress.push(res.body.progress);
    if (res.body.status === 'completed' || res.body.status === 'failed') return { status: res.body.status, progress };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`task ${id} did not end`);
}

/** gateway_job_polls_total of a channel, by how the polls were answered, from the worker's /metrics. */
async function jobPolls(channel: string, via: 'list' | 'single'): Promise<number> {
  return sumOf(await scrape(workerMetricsUrl), 'gateway_job_polls_total', { channel, via });
}

async function historyLength(taskId: string): Promise<number> {
  return (await temporal.workflow.getHandle(taskId).fetchHistory()).events?.length ?? 0;
}

test('jobs are polled through list pages only, and every task completes, fails or cancels as with its own polls', async () => {
  const created = await Promise.all(Array.from({ length: TASKS }, (_, i) => createTask(gw.url, key, { model: 'motion-2', prompt: `listed ${i}`, images: [] })));
  const long = await createTask(gw.url, key, { model: 'motion-2', prompt: `listed, three times as long [sim:ms=${JOB_MS * 3}]`, images: [] });
  const failing = await createTask(gw.url, key, { model: 'motion-2', prompt: 'listed, then fails [sim:fail]', images: [] });
  const cancelled = await createTask(gw.url, key, { model: 'motion-2', prompt: `listed, then cancelled [sim:ms=${JOB_MS * 10}]`, images: [] });

  const watched = await Promise.all(created.map((t) => progressUntilTerminal(t.id)));
  for (const { status, progress } of watched) {
    expect(status).toBe('completed');
    // Progress moved while the job ran, and never went back.
    expect(new Set(progress).size).toBeGreaterThan(2);
    for (let i = 1; i < progress.length; i++) expect(progress[i]).toBeGreaterThanOrEqual(progress[i - 1]!);
  }
  for (const t of created) expect((await waitForTerminal(gw.url, key, t.id)).final.video_url).toEqual(expect.any(String));
  const failed = await waitForTerminal(gw.url, key, failing.id);
  expect(failed.final).toMatchObject({ status: 'failed', error: { code: 'upstream_failed' } });

  expect((await call(`${gw.url}/v1/videos/${encodeURIComponent(cancelled.id)}`, { key, method: 'DELETE' })).status).toBe(200);

  // A job three times as long, polled three times as often: the same history.
  await waitForTerminal(gw.url, key, long.id);
  const lengths = await Promise.all([...created, long].map((t) => historyLength(t.id)));
  expect(new Set(lengths).size).toBe(1);
  expect(lengths[0]).toBeLessThanOrEqual(30);

  const stats = await simStats();
  expect(stats.requests['openai.videos.list']).toBeGreaterThan(0);
  expect(stats.requests['openai.videos.get'] ?? 0).toBe(0);
  // About one list request per poll interval while any job ran, not one per job and interval.
  expect(await jobPolls('listed', 'single')).toBe(0);
  expect(await jobPolls('listed', 'list')).toBeGreaterThan(stats.requests['openai.videos.list']!);

  // The cancelled task's step stops (the cancel reaches it with a heartbeat's answer) and leaves
  // the sweeps: the list goes quiet once nothing runs.
  await waitFor(
    'the list to go quiet',
    async () => {
      const before = (await simStats()).requests['openai.videos.list'];
      await new Promise((r) => setTimeout(r, 3 * POLL_MS));
      return (await simStats()).requests['openai.videos.list'] === before;
    },
    30_000,
    0,
  );
}, 120_000);

test('a list outage delays the polls it fails, and the channel lists again once it is over', async () => {
  const singlesBefore = await jobPolls('listed', 'single');
  lists.listed!.answer = 'outage';
  const requestsBefore = lists.listed!.requests;
  const tasks = await Promise.all([0, 1].map((i) => createTask(gw.url, key, { model: 'motion-2', prompt: `through an outage ${i}`, images: [] })));
  await waitFor('the list to fail a few times', async () => lists.listed!.requests >= requestsBefore + 3, 30_000, 50);
  lists.listed!.answer = 'pass';
  for (const t of tasks) {
    const { status, progress } = await progressUntilTerminal(t.id);
    expect(status).toBe('completed');
    for (let i = 1; i < progress.length; i++) expect(progress[i]).toBeGreaterThanOrEqual(progress[i - 1]!);
  }
  // Listed again after the outage, never asked job by job.
  expect(await jobPolls('listed', 'single')).toBe(singlesBefore);
  expect((await simStats()).requests['openai.videos.get'] ?? 0).toBe(0);
}, 120_000);

test('a provider that refuses the list is asked once, then polled job by job, and its tasks complete', async () => {
  const retrievesBefore = (await simStats()).requests['openai.videos.get'] ?? 0;
  const tasks = await Promise.all([0, 1, 2].map((i) => createTask(gw.url, key, { model: 'motion-2-pro', prompt: `no list ${i}`, images: [] })));
  for (const t of tasks) expect((await waitForTerminal(gw.url, key, t.id)).final.status).toBe('completed');
  expect(lists.refusing!.requests).toBe(1);
  expect(await jobPolls('refusing', 'list')).toBe(0);
  expect(await jobPolls('refusing', 'single')).toBeGreaterThanOrEqual(3 * 5);
  expect(((await simStats()).requests['openai.videos.get'] ?? 0) - retrievesBefore).toBeGreaterThanOrEqual(3 * 5);
}, 120_000);
