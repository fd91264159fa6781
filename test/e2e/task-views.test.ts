/**
 * Status reads from task views (tasks/task-views.ts) on the real stack: API and worker processes
 * sharing PostgreSQL, the dev server, the provider simulator. While a task's job is watched, and
 * once it has ended, its reads make no Temporal call; a run an operator terminates reads as
 * failed once the sweep of stopped runs has seen it stop (here between the reconciler's passes);
 * a run an operator cancels keeps the view that says so; a task still waiting for its first
 * workflow task reads from its initial view past that view's lease, after one describe.
 */
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { call, createTask } from '../support/client';
import { scrape, sumOf } from '../support/prometheus';
import { e2eEnv, startGateway, type Gateway } from '../support/stack';
import { waitFor } from '../support/ports';

const METRICS_TOKEN = 'views-metrics-token';

let gw: Gateway;
let key: string;
let temporal: Client;

beforeAll(async () => {
  // No reconciler pass during the file: only the sweep's own timer sees the stopped runs.
  gw = await startGateway({ env: { BILLING_RECONCILE_SECONDS: '3600', TASK_STOP_SWEEP_SECONDS: '1', METRICS_TOKEN } });
  key = await gw.issueKey('views');
  temporal = new Client({ connection: await Connection.connect({ address: e2eEnv().temporalAddress }) });
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await temporal?.connection.close();
}, 120_000);

type Read = { status: string; progress: number; error?: { code: string } | null };

const read = async (id: string): Promise<Read> => {
  const res = await call<Read>(`${gw.url}/v1/videos/${encodeURIComponent(id)}`, { key });
  if (res.status !== 200) throw new Error(`read ${id}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
};

/** How many status reads each source answered in the API so far. */
async function readsBySource(): Promise<{ view: number; temporal: number; closed: number }> {
  const samples = await scrape(`${gw.url}/metrics`, METRICS_TOKEN);
  const of = (source: string) => sumOf(samples, 'gateway_task_reads_total', { source });
  return { view: of('view'), temporal: of('temporal'), closed: of('closed') };
}

test('reads of a watched job, and of a finished task, come from its view: no Temporal call, and progress never goes back', async () => {
  const task = await createTask(gw.url, key, { model: 'vidgen3', prompt: 'a slow tide [sim:ms=8000]' });
  let last: Read = await read(task.id);
  // Its watching step has started, reported, and taken the view's lease.
  await waitFor('the job in progress', async () => (last = await read(task.id)).status === 'processing' && last.progress > 0, 30_000, 100);
  const before = await readsBySource();
  const seen: number[] = [];
  for (let i = 0; i < 10; i++) {
    const r = await read(task.id);
    expect(r.status).toBe('processing');
    seen.push(r.progress);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const during = await readsBySource();
  expect(during.view - before.view).toBe(10);
  expect(during.temporal - before.temporal).toBe(0);
  expect([...seen].sort((a, b) => a - b)).toEqual(seen);
  expect(seen[0]).toBeGreaterThanOrEqual(last.progress);

  await waitFor('the task completed', async () => (last = await read(task.id)).status === 'completed', 60_000, 200);
  expect(last.progress).toBe(100);
  const ended = await readsBySource();
  for (let i = 0; i < 5; i++) expect(await read(task.id)).toMatchObject({ status: 'completed', progress: 100 });
  const after = await readsBySource();
  expect(after.view - ended.view).toBe(5);
  expect(after.temporal - ended.temporal).toBe(0);
}, 120_000);

test('a run an operator terminates reads as failed once the sweep sees it stopped, although its view was leased', async () => {
  const task = await createTask(gw.url, key, { model: 'vidgen3', prompt: 'never ends here [sim:ms=120000]' });
  await waitFor('the job in progress', async () => (await read(task.id)).status === 'processing', 30_000, 100);
  const before = await readsBySource();
  await read(task.id);
  expect((await readsBySource()).view - before.view).toBe(1);

  await temporal.workflow.getHandle(task.id).terminate('an operator stopped it');
  const terminatedAt = Date.now();
  let last: Read | undefined;
  // The lease lasts the watching step's heartbeat timeout (over 30 s): only the sweep's drop ends it sooner.
  await waitFor('the read to show the stop', async () => (last = await read(task.id)).status === 'failed', 15_000, 200);
  expect(last?.error).toMatchObject({ code: 'aborted' });
  expect(Date.now() - terminatedAt).toBeLessThan(15_000);
}, 120_000);

test('a run an operator cancels keeps the view of its own end after the sweep has seen it stop', async () => {
  const task = await createTask(gw.url, key, { model: 'vidgen3', prompt: 'cancelled from the UI [sim:ms=120000]' });
  await waitFor('the job in progress', async () => (await read(task.id)).status === 'processing', 30_000, 100);
  await temporal.workflow.getHandle(task.id).cancel();
  await waitFor('the run cancelled', async () => (await temporal.workflow.getHandle(task.id).describe()).status.name === 'CANCELLED', 30_000, 200);
  // Two sweeps of one second each have seen the closed run by now (visibility is immediate on the dev server).
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const before = await readsBySource();
  for (let i = 0; i < 3; i++) expect(await read(task.id)).toMatchObject({ status: 'failed', error: { code: 'cancelled' } });
  const after = await readsBySource();
  expect(after.view - before.view).toBe(3);
  expect(after.temporal - before.temporal).toBe(0);
}, 120_000);

test("a task still waiting for a worker costs one describe past its initial view's lease, then reads from the view again", async () => {
  // No worker: the task's first workflow task waits, as behind a burst's backlog.
  await gw.killWorker();
  const task = await createTask(gw.url, key, { model: 'vidgen3', prompt: 'waits for a worker [sim:ms=1000]' });
  const db = new pg.Client({ connectionString: gw.databaseUrl });
  await db.connect();
  try {
    const created = await read(task.id);
    expect(created).toMatchObject({ status: 'pending', progress: 0 });
    // Its initial view's lease has ended (a minute after the create).
    await db.query("update task_views set fresh_until = now() - interval '1 second' where task_id = $1", [task.id]);
    const before = await readsBySource();
    expect(await read(task.id)).toEqual(created);
    expect((await readsBySource()).temporal - before.temporal).toBe(1);
    // The describe showed a run with no workflow task completed: the API renews the view's lease (not awaited by the read).
    await waitFor(
      'the lease renewed',
      async () =>
        (await db.query<{ fresh: boolean }>('select fresh_until > now() as fresh from task_views where task_id = $1', [task.id])).rows[0]?.fresh === true,
      10_000,
      50,
    );
    const renewed = await readsBySource();
    for (let i = 0; i < 5; i++) expect(await read(task.id)).toEqual(created);
    const after = await readsBySource();
    expect(after.view - renewed.view).toBe(5);
    expect(after.temporal - renewed.temporal).toBe(0);
  } finally {
    await db.end();
  }
  // A worker comes: the workflow's own publishes take over from the initial view.
  await gw.startWorker();
  await waitFor('the task completed', async () => (await read(task.id)).status === 'completed', 60_000, 200);
}, 120_000);
