/**
 * What the provider does wrong, and what the task does about it: jobs that fail, requests
 * rejected, bursts of 429/5xx, dropped connections, a lost create response.
 */
import { Client, Connection } from '@temporalio/client';
import { call, createTask, waitForTerminal } from '../support/client';
import { ADMIN_TOKEN, e2eEnv, startGateway, type Gateway } from '../support/stack';

let gw: Gateway;
let key: string;
let temporal: Client;

beforeAll(async () => {
  // Short backoff so a burst of retries takes seconds, as it would with Retry-After hints.
  gw = await startGateway({ env: { UPSTREAM_RETRY_INITIAL_MS: '100', UPSTREAM_RETRY_MAX_MS: '400' } });
  key = await gw.issueKey('faults');
  temporal = new Client({ connection: await Connection.connect({ address: e2eEnv().temporalAddress }) });
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await temporal?.connection.close();
}, 120_000);

const unique = () => Math.random().toString(36).slice(2, 10);

test('an upstream job that fails: status failed, with the provider reason kept', async () => {
  const created = await createTask(gw.url, key, { model: 'vidgen3-fast', prompt: `doomed ${unique()} [sim:fail] [sim:ms=300]` });
  const { final } = await waitForTerminal(gw.url, key, created.id);
  expect(final.status).toBe('failed');
  expect(final.video_url).toBeNull();
  expect(final.error?.code).toBe('upstream_failed');
  expect(final.error?.message.length).toBeGreaterThan(5);
});

test('a request the provider rejects (4xx) fails the task at once, without retrying', async () => {
  const prompt = `rejected ${unique()} [sim:reject]`;
  const created = await createTask(gw.url, key, { model: 'motion-2', prompt, images: [] });
  const { final } = await waitForTerminal(gw.url, key, created.id);
  expect(final.status).toBe('failed');
  expect(final.error?.code).toBe('upstream_rejected');
  expect(final.error?.message).toMatch(/HTTP 400/);
});

test('a content-filtered Veo result fails with the filter reason', async () => {
  const created = await createTask(gw.url, key, { model: 'vidgen3', prompt: `filtered ${unique()} [sim:filtered] [sim:ms=200]` });
  const { final } = await waitForTerminal(gw.url, key, created.id);
  expect(final.status).toBe('failed');
  expect(final.error?.code).toBe('content_filtered');
});

test.each([
  ['vidgen3', '[sim:submit-5xx=3] [sim:poll-429=2] [sim:poll-5xx=2] [sim:content-5xx=2]'],
  ['motion-2', '[sim:submit-429=3] [sim:poll-5xx=3] [sim:content-5xx=2] [sim:drop=2]'],
])('%s survives bursts of upstream 5xx, 429 and dropped connections: %s', async (model, markers) => {
  const created = await createTask(gw.url, key, { model, prompt: `resilient ${unique()} ${markers} [sim:ms=500]`, images: [] });
  const { final } = await waitForTerminal(gw.url, key, created.id, 90_000);
  expect(final.status).toBe('completed');
  const video = await fetch(final.video_url!);
  expect(video.status).toBe(200);
  expect(Buffer.from(await video.arrayBuffer()).toString('ascii', 4, 8)).toBe('ftyp');
});

test("a video channel's failures, recorded by the worker, are in the operator's channel view", async () => {
  const marker = unique();
  const created = await createTask(gw.url, key, { model: 'vidgen3', prompt: `noted ${marker} [sim:submit-5xx=2] [sim:ms=200]`, images: [] });
  expect((await waitForTerminal(gw.url, key, created.id, 60_000)).final.status).toBe('completed');
  // The worker writes its failures in the background: the view shows them within moments.
  let veo: { state: string; failed: number; last_error: string | null; recent_errors: { at: number; message: string }[] } | undefined;
  for (let i = 0; i < 50; i++) {
    const res = await fetch(`${gw.url}/admin/channels`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const list = (await res.json()) as {
      data: { kind: string; name: string; state: string; failed: number; last_error: string | null; recent_errors: { at: number; message: string }[] }[];
    };
    veo = list.data.find((c) => c.kind === 'video' && c.name === 'sim-veo');
    if ((veo?.failed ?? 0) >= 2) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  expect(veo).toMatchObject({ state: 'failing', last_error: expect.stringMatching(/HTTP 5\d\d/) });
  expect(veo!.failed).toBeGreaterThanOrEqual(2);
  expect(veo!.recent_errors.length).toBeGreaterThanOrEqual(2);
  expect(Math.abs(veo!.recent_errors[0]!.at - Date.now() / 1000)).toBeLessThan(60);
  // The provider's error text is there, the prompt is not.
  for (const e of veo!.recent_errors) expect(e.message).not.toContain(marker);
});

test('a create whose response is lost is retried with its idempotency key: one upstream job, not two', async () => {
  const prompt = `lost response ${unique()} [sim:drop-after-create=2] [sim:ms=300]`;
  const before = await call<{ jobsCreated: Record<string, number> }>(`${gw.simulatorUrl}/_sim/stats`);
  const created = await createTask(gw.url, key, { model: 'motion-2', prompt, images: [] });
  const { final } = await waitForTerminal(gw.url, key, created.id);
  expect(final.status).toBe('completed');
  const jobs = await call<{ data: { id: string; idempotencyKey: string | null }[] }>(`${gw.simulatorUrl}/_sim/jobs?prompt=${encodeURIComponent(prompt)}`);
  expect(jobs.status).toBe(200);
  expect(jobs.body.data).toHaveLength(1);
  expect(jobs.body.data[0]?.idempotencyKey).toBe(`${created.id}:submit`);
  const state = (await temporal.workflow.getHandle(created.id).describe()).memo?.state as { upstream: { jobId: string } };
  expect(state.upstream.jobId).toBe(jobs.body.data[0]?.id);
  expect(before.status).toBe(200);
});
