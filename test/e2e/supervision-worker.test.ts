/**
 * The standalone worker (`npm run worker`, dist/src/worker.js) and a Temporal that goes away.
 * It reaches Temporal through a TCP relay the test can cut. A short cut is ridden out (the
 * worker runs tasks again afterwards); a cut longer than TEMPORAL_LOST_EXIT_SECONDS makes it
 * exit 1 instead of waiting unseen for ever, and so does a Temporal that never answers at start.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createTask, waitForTerminal } from '../support/client';
import { freePort, waitFor } from '../support/ports';
import { runNode, TEST_DATA, type Child } from '../support/processes';
import { e2eEnv, startGateway, type Gateway } from '../support/stack';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';

let gw: Gateway;
let key: string;
let relay: TcpProxy;
const workers: Child[] = [];

function workerEnv(temporalAddress: string, lostExitSeconds: number): Record<string, string> {
  return {
    DATA_DIR: gw.dataDir,
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_TASK_QUEUE: gw.taskQueue,
    DATABASE_URL: gw.databaseUrl,
    SIMULATOR_URL: gw.simulatorUrl,
    UPSTREAM_POLL_MS: '200',
    FETCH_ALLOW_PRIVATE: 'true',
    TEMPORAL_LOST_EXIT_SECONDS: String(lostExitSeconds),
  };
}

function startWorker(name: string, env: Record<string, string>): { child: Child; log: () => string } {
  const child = runNode('dist/src/worker.js', env, name);
  workers.push(child);
  const file = path.join(TEST_DATA, `${name}.log`);
  return { child, log: () => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '') };
}

/** The exit code, or 'running' if the process has not exited within ms. */
async function exitWithin(child: Child, ms: number): Promise<number | null | 'running'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([child.exited, new Promise<'running'>((r) => (timer = setTimeout(() => r('running'), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

beforeAll(async () => {
  // The API talks to Temporal directly; only the worker goes through the relay.
  gw = await startGateway({ noWorker: true });
  key = await gw.issueKey('supervision-worker');
  const [host, port] = e2eEnv().temporalAddress.split(':');
  relay = await startTcpProxy(host!, Number(port));
}, 120_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await relay?.close();
  await gw?.stop();
}, 120_000);

test('Temporal cut for a while: the worker rides it out and runs tasks after; cut for good: it exits 1', async () => {
  const worker = startWorker('supervision-worker-relay', workerEnv(`127.0.0.1:${relay.port}`, 30));
  await waitFor('worker running', async () => worker.log().includes('worker running'), 60_000);

  relay.cut();
  await waitFor('the loss noticed', async () => worker.log().includes('Temporal does not answer'), 30_000, 100);
  relay.restore();
  await waitFor('Temporal back', async () => worker.log().includes('Temporal answers again'), 30_000, 100);
  expect(worker.child.proc.exitCode).toBeNull();
  const task = await createTask(gw.url, key, { model: 'vidgen3-fast', prompt: 'after a short cut [sim:ms=300]' });
  expect((await waitForTerminal(gw.url, key, task.id, 90_000)).final.status).toBe('completed');

  relay.cut();
  // 30 s without an answer, checked every 5 s, then at most 15 s to shut down.
  const code = await exitWithin(worker.child, 100_000);
  expect(code).toBe(1);
  expect(worker.log()).toMatch(/Temporal is gone; the worker stops and exits 1/);
}, 240_000);

test('Temporal never answers at start: the worker exits 1 after TEMPORAL_LOST_EXIT_SECONDS instead of waiting for ever', async () => {
  const nothingListens = await freePort();
  const worker = startWorker('supervision-worker-nobody', workerEnv(`127.0.0.1:${nothingListens}`, 3));
  const code = await exitWithin(worker.child, 60_000);
  expect(code).toBe(1);
  expect(worker.log()).toMatch(/TEMPORAL_LOST_EXIT_SECONDS/);
}, 90_000);
