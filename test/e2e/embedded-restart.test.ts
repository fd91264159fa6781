/**
 * `npm start`'s process (dist/src/main.js): embedded Temporal dev server + worker + API.
 * SIGTERM stops every child; starting again on the same DATA_DIR resumes the task in flight.
 * A terminal's Ctrl-C (SIGINT to the whole process group, children included) is an orderly
 * stop too: nothing is restarted, and the store stays until the gateway has closed it.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { createTask, queryTask, waitForTerminal } from '../support/client';
import { waitFor } from '../support/ports';
import { killGroup, signalGroup, startGroup, type GroupLeader } from '../support/process-group';
import { childPids, runNode, TEST_DATA, type Child } from '../support/processes';
import { e2eEnv, embeddedEnv } from '../support/stack';

const dataDir = path.join(TEST_DATA, 'embedded');
let env: Record<string, string>;
let main: Child | null = null;
let run = 0;

async function startMain(): Promise<string> {
  const logName = `embedded-${++run}`;
  main = runNode('dist/src/main.js', env, logName);
  const logFile = path.join(TEST_DATA, `${logName}.log`);
  await waitFor('banner', async () => fs.existsSync(logFile) && fs.readFileSync(logFile, 'utf8').includes('Try it:'), 90_000, 200);
  return fs.readFileSync(logFile, 'utf8');
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

beforeAll(async () => {
  fs.rmSync(dataDir, { recursive: true, force: true });
  // An external simulator, so upstream jobs outlive the gateway's restart as a real provider's do.
  env = await embeddedEnv(dataDir, { SIMULATOR_URL: e2eEnv().simulatorUrl, TEMPORAL_EAGER_START: 'true' });
}, 120_000);

afterAll(async () => {
  await main?.stop();
}, 120_000);

test('first start prints a demo key; SIGTERM stops all; a restart resumes the task in flight', async () => {
  const banner = await startMain();
  const key = /Demo API key\s+(sk-\S+)/.exec(banner)?.[1];
  expect(key).toBeDefined();
  expect(banner).toMatch(/Admin token\s+\S+/);
  const base = `http://127.0.0.1:${env.PORT}`;
  expect((await fetch(`${base}/healthz`)).status).toBe(200);
  // Finished tasks stay readable for TASK_RETENTION_DAYS (30), not the dev server's 24 h.
  const connection = await Connection.connect({ address: `127.0.0.1:${env.TEMPORAL_DEV_PORT}` });
  const ns = await connection.workflowService.describeNamespace({ namespace: 'default' });
  expect(Number(ns.config?.workflowExecutionRetentionTtl?.seconds)).toBe(30 * 86_400);
  await connection.close();

  const created = await createTask(base, key!, { model: 'motion-2', prompt: 'across a restart [sim:ms=5000]', images: [] });
  await waitFor('processing', async () => (await queryTask(base, key!, created.id)).body.status === 'processing', 20_000);
  // TEMPORAL_EAGER_START, with the API and the worker in this process: the run was started
  // eagerly, its first workflow task handed to the worker in the start's answer rather than
  // through the task queue.
  const adminToken = /Admin token\s+(\S+)/.exec(banner)?.[1];
  const scraped = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } })).text();
  expect(scraped).toMatch(/^gateway_workflow_starts_total\{eager="true"\} 1$/m);

  expect(await main!.stop(20_000)).toBe(0);
  expect(await portOpen(Number(env.TEMPORAL_DEV_PORT))).toBe(false);
  expect(await portOpen(Number(env.PORT))).toBe(false);

  const second = await startMain();
  expect(second).not.toMatch(/Demo API key/);
  const { final } = await waitForTerminal(base, key!, created.id, 90_000);
  expect(final.status).toBe('completed');
  expect((await fetch(final.video_url!)).status).toBe(200);
});

/** main.js in a process group of its own on a fresh DATA_DIR, once its banner is printed. */
async function startGroupMain(name: string, extra: Record<string, string> = {}): Promise<{ leader: GroupLeader; groupEnv: Record<string, string> }> {
  const groupDir = path.join(TEST_DATA, name);
  fs.rmSync(groupDir, { recursive: true, force: true });
  const groupEnv = await embeddedEnv(groupDir, { SIMULATOR_URL: e2eEnv().simulatorUrl, ...extra });
  const leader = startGroup('dist/src/main.js', groupEnv, name);
  await waitFor('banner', async () => fs.existsSync(leader.log) && fs.readFileSync(leader.log, 'utf8').includes('Try it:'), 90_000, 200);
  return { leader, groupEnv };
}

/** A task created with the leader's demo key, once its watching step runs (the worker has a step in flight). */
async function taskInFlight(leader: GroupLeader, base: string, prompt: string): Promise<{ key: string; created: { id: string } }> {
  const key = /Demo API key\s+(sk-\S+)/.exec(fs.readFileSync(leader.log, 'utf8'))?.[1];
  if (!key) throw new Error('no demo key in the banner');
  const created = await createTask(base, key, { model: 'motion-2', prompt, images: [] });
  await waitFor('processing', async () => (await queryTask(base, key, created.id)).body.status === 'processing', 20_000);
  return { key, created };
}

/** The leader's exit code, or a sentence when it still runs after 30 s. */
function exitWithin30s(leader: GroupLeader): Promise<number | null | string> {
  return Promise.race([leader.exited, new Promise<string>((resolve) => setTimeout(() => resolve('still running after 30 s'), 30_000))]);
}

/**
 * The leader's log lines from its 'stopping' on. All of them are JSON: a line written around
 * the logger (the Temporal core's own warnings, say) would escape its levels and this check.
 */
function linesOfTheStop(leader: GroupLeader): { level: number; msg: string }[] {
  const all = fs.readFileSync(leader.log, 'utf8').split('\n');
  const from = all.findIndex((l) => l.startsWith('{') && (JSON.parse(l) as { msg: string }).msg === 'stopping');
  expect(from).toBeGreaterThanOrEqual(0);
  const lines = all.slice(from).filter((l) => l !== '');
  expect(lines.filter((l) => !l.startsWith('{'))).toEqual([]);
  return lines.map((l) => JSON.parse(l) as { level: number; msg: string });
}

test('Ctrl-C: SIGINT to the whole process group stops everything in order, exit 0, nothing restarted or left', async () => {
  const { leader, groupEnv } = await startGroupMain('embedded-ctrl-c');
  try {
    signalGroup(leader, 'SIGINT');
    expect(await exitWithin30s(leader)).toBe(0);
    const during = linesOfTheStop(leader);
    expect(during.at(-1)?.msg).toBe('stopped');
    // The dev server's exit on the group's SIGINT is the stop's, not a crash; the store answered
    // the API's last writes (its text holds' retirement) before it was closed.
    expect(during.filter((l) => l.level >= 40).map((l) => l.msg)).toEqual([]);
    for (const port of [groupEnv.PORT, groupEnv.TEMPORAL_DEV_PORT]) {
      await waitFor(`port ${port} closed`, async () => !(await portOpen(Number(port))), 10_000);
    }
  } finally {
    await killGroup(leader);
  }
}, 150_000);

test('Ctrl-C with a task in flight: the stop does not wait on the gone dev server, says nothing alarming, and a restart completes the task', async () => {
  const { leader, groupEnv } = await startGroupMain('embedded-ctrl-c-busy');
  const base = `http://127.0.0.1:${groupEnv.PORT}`;
  try {
    // Its watching step runs and heartbeats: the worker has a step in flight when the signal comes.
    const { key, created } = await taskInFlight(leader, base, 'interrupted [sim:ms=6000]');
    const signalled = Date.now();
    signalGroup(leader, 'SIGINT');
    expect(await exitWithin30s(leader)).toBe(0);
    // The worker's drain (its grace, the core's retries towards the gone server) is not waited for.
    const stopMs = Date.now() - signalled;
    const during = linesOfTheStop(leader);
    expect(during.at(-1)?.msg).toBe('stopped');
    expect(during.filter((l) => l.level >= 40).map((l) => l.msg)).toEqual([]);
    expect(stopMs).toBeLessThan(8_000);

    const again = startGroup('dist/src/main.js', groupEnv, 'embedded-ctrl-c-busy-2');
    try {
      await waitFor('banner', async () => fs.existsSync(again.log) && fs.readFileSync(again.log, 'utf8').includes('Try it:'), 90_000, 200);
      const { final } = await waitForTerminal(base, key, created.id, 120_000);
      expect(final.status).toBe('completed');
    } finally {
      signalGroup(again, 'SIGTERM');
      await exitWithin30s(again);
      await killGroup(again);
    }
  } finally {
    await killGroup(leader);
  }
}, 300_000);

test('a stop that begins while the crashed dev server waits for its restart does not wait on the worker, and restarts nothing', async () => {
  // A minute's backoff: the server is still down when the stop begins.
  const { leader, groupEnv } = await startGroupMain('embedded-stop-dev-server-down', { SUPERVISOR_RESTART_BACKOFF_MS: '60000' });
  const base = `http://127.0.0.1:${groupEnv.PORT}`;
  try {
    // Its watching step runs: the worker has a step in flight, which its drain would wait for.
    await taskInFlight(leader, base, 'the server crashes under it [sim:ms=60000]');
    const [devServer] = childPids(leader.proc.pid!, 'temporal');
    expect(devServer).toBeDefined();
    process.kill(devServer!, 'SIGKILL');
    await waitFor('the restart waiting', async () => fs.readFileSync(leader.log, 'utf8').includes('restarting the temporal dev server'), 20_000, 100);
    const signalled = Date.now();
    leader.proc.kill('SIGTERM');
    expect(await exitWithin30s(leader)).toBe(0);
    // The worker's drain towards a server that is down (its grace, the core's retries) is not waited for.
    expect(Date.now() - signalled).toBeLessThan(10_000);
    const messages = linesOfTheStop(leader).map((l) => l.msg);
    expect(messages.at(-1)).toBe('stopped');
    expect(messages).toContain('the temporal dev server has stopped: the worker is not drained, its steps in flight resume at the next start');
    expect(messages.filter((m) => m === 'temporal dev server restarted' || m === 'restarting the temporal dev server')).toEqual([]);
  } finally {
    await killGroup(leader);
  }
}, 150_000);

test('a dev server that exits once the stop has begun, before its turn, is not restarted', async () => {
  const { leader } = await startGroupMain('embedded-stop-dev-server-exit');
  try {
    const [devServer] = childPids(leader.proc.pid!, 'temporal');
    expect(devServer).toBeDefined();
    // The stop stops the API and the worker first: the dev server's exit comes before its turn.
    leader.proc.kill('SIGTERM');
    process.kill(devServer!, 'SIGKILL');
    expect(await exitWithin30s(leader)).toBe(0);
    const messages = linesOfTheStop(leader).map((l) => l.msg);
    expect(messages.at(-1)).toBe('stopped');
    // Not taken for a crash: no restart. (The note that the worker's drain was not waited for
    // comes when the server's exit is seen before the drain ends, which this test does not fix.)
    const notDrained = 'the temporal dev server has stopped: the worker is not drained, its steps in flight resume at the next start';
    expect(messages.filter((m) => /dev server/.test(m) && m !== notDrained)).toEqual([]);
  } finally {
    await killGroup(leader);
  }
}, 150_000);
