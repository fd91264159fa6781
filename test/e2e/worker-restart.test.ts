/**
 * Durability: the worker is killed (SIGKILL) mid-task; status reads keep answering from
 * what the Temporal server keeps; a new worker picks the task up and completes it.
 */
import { createTask, queryTask, waitForTerminal } from '../support/client';
import { startGateway, type Gateway } from '../support/stack';

let gw: Gateway;
let key: string;

beforeAll(async () => {
  gw = await startGateway();
  key = await gw.issueKey('restart');
}, 120_000);

afterAll(async () => {
  await gw?.stop();
}, 120_000);

test('worker killed mid-task: reads still answer, the task completes after a restart', async () => {
  const created = await createTask(gw.url, key, { model: 'motion-2-pro', prompt: 'a long take [sim:ms=4000]', images: [], duration: 15 });
  // Wait until the upstream job runs, so the kill lands mid-task.
  for (;;) {
    const res = await queryTask(gw.url, key, created.id);
    if (res.body.status === 'processing') break;
    expect(res.body.status).toBe('pending');
    await new Promise((r) => setTimeout(r, 100));
  }
  await gw.killWorker();

  // With no worker polling, a status read answers from what the server holds (the memo and the
  // watching step's last heartbeat), at once.
  for (let i = 0; i < 3; i++) {
    const started = Date.now();
    const res = await queryTask(gw.url, key, created.id);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('processing');
    expect(res.body.video_url).toBeNull();
    expect(Date.now() - started).toBeLessThan(5000);
  }
  const health = await fetch(`${gw.url}/healthz`);
  expect([200, 503]).toContain(health.status); // pollers of a killed worker linger in Temporal for up to ~75 s

  // Let the upstream job finish while no worker runs, then bring one back.
  await new Promise((r) => setTimeout(r, 4000));
  await gw.startWorker();
  const { final } = await waitForTerminal(gw.url, key, created.id, 90_000);
  expect(final.status).toBe('completed');
  const video = await fetch(final.video_url!);
  expect(video.status).toBe(200);
});

test('tasks created while no worker runs wait as pending and complete once one starts', async () => {
  await gw.killWorker();
  const created = await createTask(gw.url, key, { model: 'vidgen2-pro', prompt: 'queued while the worker is away [sim:ms=300]' });
  const res = await queryTask(gw.url, key, created.id);
  expect(res.status).toBe(200);
  expect(res.body.status).toBe('pending');
  await gw.startWorker();
  const { final } = await waitForTerminal(gw.url, key, created.id, 90_000);
  expect(final.status).toBe('completed');
});

test('a worker killed in the middle of a submit: the submit is retried within seconds, not after its start-to-close timeout', async () => {
  // The provider takes 6 s to answer the submit; the worker dies 2 s into it and a new one starts at once.
  const created = await createTask(gw.url, key, { model: 'vidgen2-pro', prompt: 'a submit cut short [sim:slow=6000][sim:ms=300]' });
  await new Promise((r) => setTimeout(r, 2000));
  await gw.killWorker();
  await gw.startWorker();
  // The step's heartbeat timeout (15 s) notices the dead worker; its 3-minute start-to-close
  // timeout would not have, within this wait.
  const { final } = await waitForTerminal(gw.url, key, created.id, 75_000);
  expect(final.status).toBe('completed');
}, 120_000);
