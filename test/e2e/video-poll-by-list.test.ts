/**
 * A channel that polls by list (`poll_by_list: true`), on the real stack (API and worker
 * processes, PostgreSQL, the Temporal dev server) in front of a provider simulator of its own:
 * running jobs are read from `GET /v1/videos` pages, never one request per job, and the tasks
 * still show monotonic progress, complete, fail with their provider's reason, and cancel (the
 * cancelled step leaving the poller's next sweep).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSimulator, type RunningSimulator } from '../../simulator/server';
import { auditMismatches } from '../support/billing';
import { call, createTask, waitForTerminal } from '../support/client';
import { freePort, waitFor } from '../support/ports';
import { scrape, sumOf, type Sample } from '../support/prometheus';
import { startGateway, type Gateway } from '../support/stack';

const POLL_MS = 200;
const JOB_MS = 3000;
const TASKS = 6;

let sim: RunningSimulator;
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
  tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'poll-by-list-'));
  const file = path.join(tmpDir, 'channels.yaml');
  fs.writeFileSync(
    file,
    [
      'channels:',
      '  - name: listed',
      '    type: openai-videos',
      `    base_url: ${sim.url}`,
      '    api_key: sim-key',
      '    models: { motion-2: sora-2 }',
      `    poll_ms: ${POLL_MS}`,
      '    expected_job_seconds: 3',
      '    poll_by_list: true',
      '',
    ].join('\n'),
  );
  const workerPort = await freePort();
  workerMetricsUrl = `http://127.0.0.1:${workerPort}/metrics`;
  gw = await startGateway({ env: { CHANNELS_FILE: file }, workerEnv: { METRICS_ADDRESS: `127.0.0.1:${workerPort}` } });
  key = await gw.issueKey('poll-by-list');
}, 120_000);

afterAll(async () => {
  if (gw) expect(await auditMismatches(gw.url)).toEqual([]);
  await gw?.stop();
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

test('jobs are polled through list pages only, and every task completes, fails or cancels as with its own polls', async () => {
  const created = await Promise.all(Array.from({ length: TASKS }, (_, i) => createTask(gw.url, key, { model: 'motion-2', prompt: `listed ${i}`, images: [] })));
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

  const stats = await simStats();
  expect(stats.requests['openai.videos.list']).toBeGreaterThan(0);
  expect(stats.requests['openai.videos.retrieve'] ?? 0).toBe(0);
  // About one list request per poll interval while any job ran, not one per job and interval.
  const jobPolls = (via: string): number => sumOf(worker, 'gateway_job_polls_total', { channel: 'listed', via });
  const worker: Sample[] = await scrape(workerMetricsUrl);
  expect(jobPolls('single')).toBe(0);
  expect(jobPolls('list')).toBeGreaterThan(stats.requests['openai.videos.list']!);

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
