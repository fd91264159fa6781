import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../src/config/paths';
import { freePort } from '../../test/support/ports';

export interface EmbeddedGateway {
  apiUrl: string;
  uiUrl: string;
  adminToken: string;
  logFile: string;
  /** SIGTERM (the gateway stops its dev server and simulator in order), SIGKILL of its process group after the grace. */
  stop(): Promise<void>;
  /** At exit, when nothing can be awaited any more: SIGKILL of the process group. */
  killNow(): void;
}

const READY_TIMEOUT_MS = 120_000;
const STOP_GRACE_MS = 30_000;

/**
 * `npm start`'s process (dist/src/main.js) on `dataDir` with ports of its own: the Temporal dev
 * server with its Web UI and the provider simulator inside. Its environment is built from
 * scratch, so provider keys, a TEMPORAL_ADDRESS or a DATABASE_URL in the caller's shell do not
 * leak into it: this gateway is always the embedded demo. `extraEnv` adds or overrides settings
 * (the console test shortens the simulated jobs with SIMULATOR_JOB_MS).
 */
export async function startEmbeddedGateway(dataDir: string, extraEnv: Record<string, string> = {}): Promise<EmbeddedGateway> {
  const root = projectRoot();
  const entry = path.join(root, 'dist', 'src', 'main.js');
  if (!fs.existsSync(entry)) throw new Error(`${entry} is missing: build first (node scripts/setup.mjs --build --temporal)`);
  fs.mkdirSync(dataDir, { recursive: true });
  const [port, devPort, uiPort, simPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const adminToken = randomBytes(16).toString('hex');
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? dataDir,
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: String(port),
    TEMPORAL_DEV_PORT: String(devPort),
    TEMPORAL_UI_PORT: String(uiPort),
    SIMULATOR_PORT: String(simPort),
    ADMIN_TOKEN: adminToken,
    // Quick polls and progress, so the tour's tasks end within seconds of their simulated jobs.
    UPSTREAM_POLL_MS: '250',
    PROGRESS_UPDATE_MS: '500',
    MALLOC_ARENA_MAX: '2',
    LOG_LEVEL: 'info',
    ...extraEnv,
  };
  const logFile = path.join(dataDir, 'gateway.log');
  const log = fs.openSync(logFile, 'a');
  // A process group of its own: a hard stop takes the dev server along.
  const child = spawn(process.execPath, [entry], { cwd: root, env, stdio: ['ignore', log, log], detached: true });
  fs.closeSync(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const alive = () => child.exitCode === null && child.signalCode === null;
  const killGroup = () => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone already
    }
  };
  const gateway: EmbeddedGateway = {
    apiUrl: `http://127.0.0.1:${port}`,
    uiUrl: `http://localhost:${uiPort}`,
    adminToken,
    logFile,
    async stop() {
      if (alive()) {
        child.kill('SIGTERM');
        const timer = setTimeout(killGroup, STOP_GRACE_MS);
        await exited;
        clearTimeout(timer);
      }
      killGroup(); // a dev server left behind by a gateway that died
    },
    killNow: killGroup,
  };

  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (!alive()) {
      killGroup();
      throw new Error(`the gateway exited during start-up; its log (${logFile}) ends with:\n${tail(logFile)}`);
    }
    if ((await answers(`${gateway.apiUrl}/readyz`)) && (await answers(gateway.uiUrl))) return gateway;
    if (Date.now() > deadline) {
      await gateway.stop();
      throw new Error(`the gateway was not ready within ${READY_TIMEOUT_MS / 1000} s; its log (${logFile}) ends with:\n${tail(logFile)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2000) })).ok;
  } catch {
    return false;
  }
}

function tail(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-15).join('\n');
  } catch {
    return '(no log)';
  }
}
