/**
 * The stacks `npm run chaos` attacks, as processes it can SIGKILL. Each process is supervised
 * the way systemd, Docker's restart policy or Kubernetes would: whenever it exits (killed, or
 * giving up by itself), it is started again after RESTART_DELAY_MS.
 * - scale-out: a Temporal dev server, the API and the worker as three processes on PostgreSQL;
 * - embedded: `npm start`'s process (dist/src/main.js: its own dev server, the worker and the API
 *   on the embedded store) in a process group of its own, killed whole, or only its dev server
 *   (which `npm start` must bring back by itself: nobody else restarts it).
 * The provider simulator runs apart and is never killed, as a real provider is not.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../src/config/paths';
import { devServerArgs } from '../src/temporal/dev-server';
import { freePort, waitFor } from '../test/support/ports';
import { childPids } from '../test/support/processes';
import { benchDatabase } from './billing';
import type { BenchChildren } from './child-guard';
import { scriptCommand } from './script-command';
import { GATEWAY_SCRIPTS, type GatewayScript } from '../test/support/start-scripts';

export const ADMIN_TOKEN = 'chaos-admin-token';
/** How long a supervisor waits before it starts a process that exited. */
const RESTART_DELAY_MS = 1000;

/** Something chaos can kill. */
export interface Target {
  name: string;
  /** SIGKILL; resolves once it is dead. */
  kill(): Promise<void>;
}

export interface ChaosStack {
  mode: 'scale-out' | 'embedded';
  url: string;
  targets: Target[];
  /** Restarts made by the supervisor (after chaos's kills, and after exits of a process's own). */
  restarts(): number;
  /** Stops supervising and stops every process. */
  stop(): Promise<void>;
}

async function apiAnswers(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) });
    return res.status === 200 || res.status === 503;
  } catch {
    return false;
  }
}

/** A process kept running: started again RESTART_DELAY_MS after every exit, until stop(). */
class Supervised {
  private proc: ChildProcess | null = null;
  private stopping = false;
  restarts = 0;

  constructor(
    private readonly what: string,
    private readonly command: string,
    private readonly args: string[],
    private readonly env: NodeJS.ProcessEnv,
    private readonly logDir: string,
    /** Its own process group, so the whole tree it starts can be killed at once. */
    private readonly group = false,
  ) {}

  start(): void {
    if (this.stopping) return;
    const log = fs.openSync(path.join(this.logDir, `${this.what.replace(/\W+/g, '-')}.log`), 'a');
    const proc = spawn(this.command, this.args, { cwd: projectRoot(), env: this.env, stdio: ['ignore', log, log], detached: this.group });
    fs.closeSync(log);
    this.proc = proc;
    proc.once('exit', () => {
      if (this.proc === proc) this.proc = null;
      if (this.stopping) return;
      setTimeout(() => {
        this.restarts++;
        this.start();
      }, RESTART_DELAY_MS);
    });
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  /** SIGKILL (to the whole group when it has one); resolves once it exited. */
  async kill(): Promise<void> {
    const proc = this.proc;
    if (!proc?.pid || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    try {
      process.kill(this.group ? -proc.pid : proc.pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
    await exited;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    const proc = this.proc;
    if (!proc?.pid || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    const target = this.group ? -proc.pid : proc.pid;
    process.kill(target, 'SIGTERM');
    const timer = setTimeout(() => {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // gone
      }
    }, 20_000);
    await exited;
    clearTimeout(timer);
  }
}

/**
 * The gateway's `script` process as package.json runs it: node with the script's flags, and
 * its variables over `env` (as the shell's `VAR=value node ...` sets them over what it inherits).
 */
function gatewayProcess(script: GatewayScript, env: NodeJS.ProcessEnv): [string, string[], NodeJS.ProcessEnv] {
  const command = scriptCommand(projectRoot(), script, true);
  return [process.execPath, [...command.nodeArgs, path.join(projectRoot(), GATEWAY_SCRIPTS[script])], { ...env, ...command.env }];
}

/** The settings both stacks run the gateway with: fast polls and retries, a quick reconciler, the shared simulator. */
function gatewayEnv(port: number, dataDir: string, simulatorUrl: string, extra: Record<string, string>): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    ADMIN_TOKEN,
    SIMULATOR_URL: simulatorUrl,
    UPSTREAM_POLL_MS: '300',
    UPSTREAM_RETRY_INITIAL_MS: '200',
    UPSTREAM_RETRY_MAX_MS: '2000',
    BILLING_RECONCILE_SECONDS: '5',
    FETCH_ALLOW_PRIVATE: 'true',
    LOG_LEVEL: 'warn',
    ...extra,
  };
}

/** Dev server, API and worker as separate supervised processes on a PostgreSQL database of the run's own. */
export async function scaleOutStack(dir: string, simulatorUrl: string, children: BenchChildren): Promise<ChaosStack> {
  const db = await benchDatabase('chaos');
  children.atEnd(db.drop);
  const temporalDir = path.join(dir, 'temporal');
  fs.mkdirSync(temporalDir, { recursive: true });
  const temporalPort = await freePort();
  const dev = new Supervised(
    'temporal',
    path.join(projectRoot(), '.tools/temporal/bin/temporal'),
    devServerArgs({
      dataDir: temporalDir,
      port: temporalPort,
      uiPort: await freePort(),
      namespace: 'default',
      headless: true,
    }),
    process.env,
    dir,
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = gatewayEnv(port, path.join(dir, 'gateway'), simulatorUrl, {
    TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
    DATABASE_URL: db.url,
    TEXT_HOLD_ORPHAN_SECONDS: '6',
  });
  const api = new Supervised('api', ...gatewayProcess('api', env), dir);
  const worker = new Supervised('worker', ...gatewayProcess('worker', env), dir);
  dev.start();
  api.start();
  worker.start();
  const all = [api, worker, dev];
  const stop = async () => {
    await Promise.all([api.stop(), worker.stop()]);
    await dev.stop();
  };
  children.atEnd(stop);
  await waitFor('the API', () => apiAnswers(url), 60_000, 100);
  return {
    mode: 'scale-out',
    url,
    targets: [
      { name: 'api', kill: () => api.kill() },
      { name: 'worker', kill: () => worker.kill() },
      { name: 'temporal dev server', kill: () => dev.kill() },
    ],
    restarts: () => all.reduce((n, p) => n + p.restarts, 0),
    stop,
  };
}

/** `npm start`'s process, supervised, in a process group of its own, on the embedded store. */
export async function embeddedStack(dir: string, simulatorUrl: string, children: BenchChildren): Promise<ChaosStack> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = gatewayEnv(port, path.join(dir, 'embedded'), simulatorUrl, {
    TEMPORAL_DEV_PORT: String(await freePort()),
    TEMPORAL_UI_PORT: String(await freePort()),
  });
  const main = new Supervised('npm-start', ...gatewayProcess('start', env), dir, true);
  main.start();
  children.atEnd(() => main.stop());
  await waitFor('npm start', () => apiAnswers(url), 90_000, 200);
  return {
    mode: 'embedded',
    url,
    targets: [
      { name: 'npm start (whole group)', kill: () => main.kill() },
      {
        name: "npm start's dev server",
        kill: async () => {
          for (const dev of main.pid === undefined ? [] : childPids(main.pid, 'temporal')) process.kill(dev, 'SIGKILL');
        },
      },
    ],
    restarts: () => main.restarts,
    stop: () => main.stop(),
  };
}
