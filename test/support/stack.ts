/**
 * A gateway for one test file: the real API and worker processes (compiled dist/), against
 * the shared Temporal dev server and simulator, on a task queue and data directory of its own.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, waitFor } from './ports';
import { TEST_DATA, runNode, type Child } from './processes';

export const ADMIN_TOKEN = 'test-admin-token';

export interface GatewayOptions {
  /** Extra env for both processes. */
  env?: Record<string, string>;
  /** Start without a worker (startWorker() later). */
  noWorker?: boolean;
  temporalAddress?: string;
}

export interface Gateway {
  url: string;
  simulatorUrl: string;
  taskQueue: string;
  dataDir: string;
  issueKey(name?: string): Promise<string>;
  startWorker(): Promise<void>;
  /** SIGKILL: the worker dies mid-step, as in a crash. */
  killWorker(): Promise<void>;
  stop(): Promise<void>;
}

export function e2eEnv(): { temporalAddress: string; simulatorUrl: string } {
  const temporalAddress = process.env.E2E_TEMPORAL_ADDRESS;
  const simulatorUrl = process.env.E2E_SIMULATOR_URL;
  if (!temporalAddress || !simulatorUrl) throw new Error('e2e globals missing: run through jest with the e2e project');
  return { temporalAddress, simulatorUrl };
}

export async function startGateway(opts: GatewayOptions = {}): Promise<Gateway> {
  const { temporalAddress, simulatorUrl } = e2eEnv();
  const name = `gw-${randomBytes(4).toString('hex')}`;
  const dataDir = path.join(TEST_DATA, name);
  fs.mkdirSync(dataDir, { recursive: true });
  const port = await freePort();
  const taskQueue = `q-${name}`;
  const env: Record<string, string> = {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    ADMIN_TOKEN,
    TEMPORAL_ADDRESS: opts.temporalAddress ?? temporalAddress,
    TEMPORAL_TASK_QUEUE: taskQueue,
    SIMULATOR_URL: simulatorUrl,
    UPSTREAM_POLL_MS: '200',
    FETCH_ALLOW_PRIVATE: 'true',
    ...opts.env,
  };
  const url = `http://127.0.0.1:${port}`;
  const api = runNode('dist/src/api/server.js', env, `${name}-api`);
  let worker: Child | null = null;
  let workerRuns = 0;

  const startWorker = async () => {
    const logName = `${name}-worker-${++workerRuns}`;
    worker = runNode('dist/src/worker.js', env, logName);
    const logFile = path.join(TEST_DATA, `${logName}.log`);
    await waitFor('worker running', async () => fs.existsSync(logFile) && fs.readFileSync(logFile, 'utf8').includes('worker running'), 60_000, 100);
  };

  await waitFor('api listening', async () => {
    const res = await fetch(`${url}/healthz`);
    return res.status === 200 || res.status === 503;
  }, 60_000, 100);
  if (!opts.noWorker) await startWorker();

  return {
    url,
    simulatorUrl,
    taskQueue,
    dataDir,
    async issueKey(keyName = 'test') {
      const res = await fetch(`${url}/admin/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: keyName }),
      });
      if (res.status !== 201) throw new Error(`issue key: HTTP ${res.status} ${await res.text()}`);
      return ((await res.json()) as { key: string }).key;
    },
    startWorker,
    async killWorker() {
      await worker?.kill();
      worker = null;
    },
    async stop() {
      await Promise.all([api.stop(), worker?.stop()]);
    },
  };
}
