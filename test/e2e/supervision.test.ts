/**
 * Supervision of `npm start`'s process (dist/src/main.js): its embedded Temporal dev server is
 * SIGKILLed. The process restarts it on the same port and SQLite file; while it is away,
 * /livez and /readyz stay 200 and text keeps answering; afterwards creates answer again and the
 * task in flight completes, run by the same in-process worker. When the dev server cannot come
 * back (its port is taken), the process gives up and exits non-zero within a bounded time.
 * When the gateway process alone is SIGKILLed, the next start stops the dev server it left.
 * A dev server that runs but does not answer (SIGSTOP) is killed and restarted.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { call, createTask, queryTask, waitForTerminal, type TaskView } from '../support/client';
import { waitFor } from '../support/ports';
import { childPids, runNode, TEST_DATA, type Child } from '../support/processes';
import { ADMIN_TOKEN, e2eEnv, embeddedEnv } from '../support/stack';

interface Embedded {
  child: Child;
  base: string;
  env: Record<string, string>;
  logFile: string;
  banner: string;
}

const running: Child[] = [];
/** Dev servers a test orphaned on purpose: afterAll kills any still there (a failed test). */
const orphans: number[] = [];
/** Samplers still running (a failed test leaves them to afterAll). */
const samplers = new Set<{ stop(): Promise<number[]> }>();

async function startEmbedded(name: string, extra: Record<string, string>): Promise<Embedded> {
  const dataDir = path.join(TEST_DATA, name);
  fs.rmSync(dataDir, { recursive: true, force: true });
  const env = await embeddedEnv(dataDir, {
    ADMIN_TOKEN,
    // An external simulator: upstream jobs and text answers do not depend on the process under test.
    SIMULATOR_URL: e2eEnv().simulatorUrl,
    DATABASE_URL: '',
    REDIS_URL: '',
    ...extra,
  });
  return runEmbedded(name, env);
}

/** Runs main.js on env (a DATA_DIR kept as it is); resolves once the banner is printed. */
async function runEmbedded(logName: string, env: Record<string, string>): Promise<Embedded> {
  const child = runNode('dist/src/main.js', env, logName);
  running.push(child);
  const logFile = path.join(TEST_DATA, `${logName}.log`);
  const banner = await waitFor(
    'banner',
    async () => {
      const log = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8') : '';
      return log.includes('Try it:') && log;
    },
    90_000,
    200,
  );
  return { child, base: `http://127.0.0.1:${env.PORT}`, env, logFile, banner };
}

function devServerOf(main: Embedded): number {
  const children = childPids(main.child.proc.pid!, 'temporal');
  expect(children).toHaveLength(1);
  return children[0]!;
}

const logOf = (main: Embedded) => fs.readFileSync(main.logFile, 'utf8');

/** Whether pid is (still) a `temporal server start-dev` (a reaped or zombie process is not). */
function isDevServer(pid: number): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('start-dev');
  } catch {
    return false;
  }
}

/** Samples a URL until stopped; every status seen. */
function sample(url: string, everyMs = 200): { stop(): Promise<number[]> } {
  const statuses: number[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        statuses.push((await fetch(url, { signal: AbortSignal.timeout(5000) })).status);
      } catch (err) {
        statuses.push(-1); // no answer at all (refused, timed out)
        void err;
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  const sampler = {
    async stop() {
      stopped = true;
      samplers.delete(sampler);
      await loop;
      return statuses;
    },
  };
  samplers.add(sampler);
  return sampler;
}

afterAll(async () => {
  await Promise.all([...samplers].map((s) => s.stop()));
  await Promise.all(running.map((c) => c.stop(20_000)));
  for (const pid of orphans.filter(isDevServer)) process.kill(pid, 'SIGKILL');
}, 120_000);

test('the dev server is SIGKILLed: restarted, creates answer again, the task in flight completes; live, ready and text throughout', async () => {
  // Long enough a first backoff to look at the gateway while Temporal is away; RPCs that
  // fail fast enough to see their 503 inside it.
  const main = await startEmbedded('supervision-restart', { SUPERVISOR_RESTART_BACKOFF_MS: '20000', TEMPORAL_RPC_TIMEOUT_MS: '2000' });
  const key = /Demo API key\s+(sk-\S+)/.exec(main.banner)?.[1];
  expect(key).toBeDefined();
  for (const p of ['/livez', '/readyz', '/healthz']) expect((await fetch(`${main.base}${p}`)).status).toBe(200);

  const inFlight = await createTask(main.base, key!, { model: 'motion-2', prompt: 'across a dev server crash [sim:ms=6000]', images: [] });
  await waitFor('processing', async () => (await queryTask(main.base, key!, inFlight.id)).body.status === 'processing', 30_000);

  const live = sample(`${main.base}/livez`);
  const ready = sample(`${main.base}/readyz`);
  const first = devServerOf(main);
  process.kill(first, 'SIGKILL');
  await waitFor('the dev server gone', async () => childPids(main.child.proc.pid!, 'temporal').length === 0, 10_000, 50);

  // Temporal is away: creates are refused with Retry-After, the rest of the gateway answers.
  const refused = await call<{ error: { code: string } }>(`${main.base}/v1/video/create`, {
    key,
    json: { model: 'vidgen3', prompt: 'while Temporal is away' },
  });
  expect(refused.status).toBe(503);
  expect(refused.body.error.code).toBe('temporal_unavailable');
  expect(refused.headers.get('retry-after')).toBe('5');
  // A health report is reused for a second and a probe may be under way at the kill, so the
  // last "ok" can still be shown for a moment (src/api/health.ts).
  const readiness = await waitFor(
    'readiness reports Temporal unreachable',
    async () => {
      const res = await call<{ status: string; store: string; temporal: string }>(`${main.base}/readyz`);
      return /unreachable/.test(res.body.temporal) && res;
    },
    5000,
    200,
  );
  expect(readiness.status).toBe(200);
  expect(readiness.body).toMatchObject({ status: 'ready', store: 'ok' });
  expect(readiness.body.temporal).toMatch(/unreachable/);
  expect((await fetch(`${main.base}/healthz`)).status).toBe(503);
  const text = await call<{ type: string; content: { text: string }[] }>(`${main.base}/v1/messages`, {
    headers: { 'x-api-key': key! },
    json: { model: 'cm-sonnet-4.5', max_tokens: 64, messages: [{ role: 'user', content: 'still here?' }] },
  });
  expect(text.status).toBe(200);
  expect(text.body.type).toBe('message');
  // All of the above happened while the dev server was still away.
  expect(logOf(main)).not.toMatch(/temporal dev server restarted/);
  expect(childPids(main.child.proc.pid!, 'temporal')).toEqual([]);

  // Back: a new dev server process, a child of the same gateway, and creates answer again.
  const created = await waitFor(
    'creates answer again',
    async () => {
      const res = await call<TaskView>(`${main.base}/v1/video/create`, { key, json: { model: 'vidgen3-fast', prompt: 'after the restart [sim:ms=300]' } });
      return res.status === 200 && res.body;
    },
    120_000,
    500,
  );
  const second = devServerOf(main);
  expect(second).not.toBe(first);
  await waitFor('worker seen polling', async () => logOf(main).includes('the worker polls the task queue again'), 70_000, 200);

  // The task that was in flight, and the one made after, complete: the in-process worker runs again.
  expect((await waitForTerminal(main.base, key!, inFlight.id, 120_000)).final.status).toBe('completed');
  const after = (await waitForTerminal(main.base, key!, created.id, 120_000)).final;
  expect(after.status).toBe('completed');
  expect((await fetch(after.video_url!)).status).toBe(200);
  // One read can still be the probe's last answer (cached 1 s) or miss its 2 s deadline on a
  // loaded machine; a gateway that stays unhealthy still fails here.
  await waitFor('healthz 200 again', async () => (await fetch(`${main.base}/healthz`)).status === 200, 30_000, 250);

  const liveStatuses = await live.stop();
  const readyStatuses = await ready.stop();
  expect(liveStatuses.length).toBeGreaterThan(20);
  expect(liveStatuses.filter((s) => s !== 200)).toEqual([]);
  expect(readyStatuses.filter((s) => s !== 200)).toEqual([]);
  expect(main.child.proc.exitCode).toBeNull();
  expect(logOf(main)).toMatch(/temporal dev server exited unexpectedly/);
}, 300_000);

test('the dev server cannot come back (its port is taken): the process stops everything and exits non-zero', async () => {
  const main = await startEmbedded('supervision-give-up', { SUPERVISOR_RESTART_MAX: '2', SUPERVISOR_RESTART_BACKOFF_MS: '3000' });
  const dataDir = main.env.DATA_DIR!;
  const port = Number(main.env.TEMPORAL_DEV_PORT);
  // Something else takes the dev server's port the moment it is free, and refuses to speak gRPC.
  const squatter = net.createServer((socket) => socket.destroy());
  process.kill(devServerOf(main), 'SIGKILL');
  const started = Date.now();
  await waitFor(
    'the port taken',
    () =>
      new Promise<boolean>((resolve) => {
        squatter.once('error', () => resolve(false));
        squatter.listen(port, '127.0.0.1', () => resolve(true));
      }),
    2500,
    20,
  );
  try {
    // Two restarts (after 3 s and 6 s), both failing, then the stop: bounded by the stop deadline.
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([main.child.exited, new Promise<'hung'>((r) => (timer = setTimeout(() => r('hung'), 110_000)))]);
    clearTimeout(timer);
    expect(code).not.toBe('hung');
    expect(code).not.toBe(0);
    expect(code).not.toBeNull();
    expect(Date.now() - started).toBeLessThan(110_000);
  } finally {
    await new Promise<void>((r) => squatter.close(() => r()));
  }
  const log = logOf(main);
  expect(log).toMatch(/temporal dev server restart failed/);
  expect(log).toMatch(/giving up/);
  // Nothing left behind: no dev server on this DATA_DIR's SQLite file, the API port closed.
  const leftovers = fs
    .readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(path.join(dataDir, 'temporal.sqlite'));
      } catch {
        return false;
      }
    });
  expect(leftovers).toEqual([]);
  await expect(fetch(`${main.base}/livez`)).rejects.toThrow();
}, 180_000);

test('the gateway process alone is SIGKILLed: the next start stops its orphaned dev server and resumes the task in flight', async () => {
  const first = await startEmbedded('supervision-orphan', {});
  const key = /Demo API key\s+(sk-\S+)/.exec(first.banner)?.[1];
  expect(key).toBeDefined();
  const task = await createTask(first.base, key!, { model: 'motion-2', prompt: 'across a SIGKILL of the gateway [sim:ms=5000]', images: [] });
  await waitFor('processing', async () => (await queryTask(first.base, key!, task.id)).body.status === 'processing', 30_000);
  const orphan = devServerOf(first);
  orphans.push(orphan);
  await first.child.kill();
  // SIGKILL reaches the gateway only: its dev server lives on, holding the port and the file.
  expect(isDevServer(orphan)).toBe(true);

  const second = await runEmbedded('supervision-orphan-2', first.env);
  expect(isDevServer(orphan)).toBe(false);
  expect(logOf(second)).toMatch(/stopping a temporal dev server left running on this DATA_DIR/);
  expect(devServerOf(second)).not.toBe(orphan);
  const { final } = await waitForTerminal(second.base, key!, task.id, 120_000);
  expect(final.status).toBe('completed');
  expect((await fetch(`${second.base}/healthz`)).status).toBe(200);
}, 240_000);

test('the dev server runs but does not answer (SIGSTOP): killed after SUPERVISOR_HUNG_SECONDS and restarted', async () => {
  const main = await startEmbedded('supervision-hung', { SUPERVISOR_HUNG_SECONDS: '10' });
  const key = /Demo API key\s+(sk-\S+)/.exec(main.banner)?.[1];
  expect(key).toBeDefined();
  const wedged = devServerOf(main);
  orphans.push(wedged);
  process.kill(wedged, 'SIGSTOP');
  await waitFor('the wedged server killed', async () => !isDevServer(wedged), 90_000, 200);
  // The gateway logs before it kills, but pino writes on a later tick: the line may land after the kill.
  await waitFor('the kill logged', async () => /the temporal dev server runs but does not answer; killing it/.test(logOf(main)), 10_000, 100);
  expect(logOf(main)).toMatch(/the temporal dev server runs but does not answer; killing it/);
  const task = await waitFor(
    'creates answer again',
    async () => {
      const res = await call<TaskView>(`${main.base}/v1/video/create`, {
        key,
        json: { model: 'vidgen3-fast', prompt: 'after a wedged dev server [sim:ms=300]' },
      });
      return res.status === 200 && res.body;
    },
    120_000,
    500,
  );
  expect(devServerOf(main)).not.toBe(wedged);
  expect((await waitForTerminal(main.base, key!, task.id, 120_000)).final.status).toBe('completed');
  expect(main.child.proc.exitCode).toBeNull();
}, 240_000);
