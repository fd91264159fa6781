/**
 * A gateway for one test file: the real API and worker processes (compiled dist/), against
 * the shared Temporal dev server and simulator, on a task queue and data directory of its own.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, waitFor } from './ports';
import { TEST_DATA, runNode, type Child } from './processes';
import { createTestDatabase } from './services';

export const ADMIN_TOKEN = 'test-admin-token';

export interface GatewayOptions {
  /** Extra env for both processes. */
  env?: Record<string, string>;
  /** Extra env for the worker only (e.g. its DATABASE_URL through a proxy a test can cut). */
  workerEnv?: Record<string, string>;
  /** Start without a worker (startWorker() later). */
  noWorker?: boolean;
  temporalAddress?: string;
}

export interface Gateway {
  url: string;
  simulatorUrl: string;
  taskQueue: string;
  dataDir: string;
  /** The gateway's own PostgreSQL database (API and worker share it, as in a scale-out deployment). */
  databaseUrl: string;
  /** Issues a key through the admin API; limits as POST /admin/keys takes them. */
  issueKey(name?: string, limits?: { quota?: number; rate_limit_rpm?: number; max_concurrent_tasks?: number }): Promise<string>;
  /** Like issueKey, also returning the key's id. */
  issueKeyWithId(name?: string, limits?: { quota?: number; rate_limit_rpm?: number; max_concurrent_tasks?: number }): Promise<{ id: string; key: string }>;
  startWorker(): Promise<void>;
  /** A second API process on the same database and settings (another replica); its URL. */
  startApiReplica(env?: Record<string, string>): Promise<string>;
  /** SIGKILL of the replica at this URL: it dies mid-request, as in a crash. */
  killApiReplica(url: string): Promise<void>;
  /** SIGKILL: the worker dies mid-step, as in a crash. */
  killWorker(): Promise<void>;
  /** SIGKILL of the API process, then a new one on the same port and settings: a gateway restart after a crash. */
  restartApi(): Promise<void>;
  stop(): Promise<void>;
}

export function e2eEnv(): { temporalAddress: string; simulatorUrl: string } {
  const temporalAddress = process.env.E2E_TEMPORAL_ADDRESS;
  const simulatorUrl = process.env.E2E_SIMULATOR_URL;
  if (!temporalAddress || !simulatorUrl) throw new Error('e2e globals missing: run through jest with the e2e project');
  return { temporalAddress, simulatorUrl };
}

/**
 * The settings of an `npm start` process under test: a data folder and ports of its own (API,
 * dev server, Web UI) and quick polls; `extra` adds to them or overrides them.
 */
export async function embeddedEnv(dataDir: string, extra: Record<string, string> = {}): Promise<Record<string, string>> {
  return {
    DATA_DIR: dataDir,
    PORT: String(await freePort()),
    TEMPORAL_DEV_PORT: String(await freePort()),
    TEMPORAL_UI_PORT: String(await freePort()),
    UPSTREAM_POLL_MS: '200',
    PROGRESS_UPDATE_MS: '200',
    ...extra,
  };
}

export async function startGateway(opts: GatewayOptions = {}): Promise<Gateway> {
  const { temporalAddress, simulatorUrl } = e2eEnv();
  const name = `gw-${randomBytes(4).toString('hex')}`;
  const dataDir = path.join(TEST_DATA, name);
  fs.mkdirSync(dataDir, { recursive: true });
  const port = await freePort();
  const taskQueue = `q-${name}`;
  const databaseUrl = opts.env?.DATABASE_URL ?? (await createTestDatabase(name));
  const env: Record<string, string> = {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    ADMIN_TOKEN,
    TEMPORAL_ADDRESS: opts.temporalAddress ?? temporalAddress,
    TEMPORAL_TASK_QUEUE: taskQueue,
    SIMULATOR_URL: simulatorUrl,
    UPSTREAM_POLL_MS: '200',
    PROGRESS_UPDATE_MS: '200',
    FETCH_ALLOW_PRIVATE: 'true',
    DATABASE_URL: databaseUrl,
    ...opts.env,
  };
  const url = `http://127.0.0.1:${port}`;
  let api = runNode('dist/src/api/server.js', env, `${name}-api`);
  let apiRuns = 1;
  const replicas: Child[] = [];
  const replicaUrls: string[] = [];
  let worker: Child | null = null;
  let workerRuns = 0;

  const startWorker = async () => {
    const logName = `${name}-worker-${++workerRuns}`;
    worker = runNode('dist/src/worker.js', { ...env, ...opts.workerEnv }, logName);
    const logFile = path.join(TEST_DATA, `${logName}.log`);
    await waitFor('worker running', async () => fs.existsSync(logFile) && fs.readFileSync(logFile, 'utf8').includes('worker running'), 60_000, 100);
  };

  const apiUp = (base: string) =>
    waitFor(
      'api listening',
      async () => {
        const res = await fetch(`${base}/healthz`);
        return res.status === 200 || res.status === 503;
      },
      60_000,
      100,
    );
  await apiUp(url);
  if (!opts.noWorker) await startWorker();

  const issueKeyWithId: Gateway['issueKeyWithId'] = async (keyName = 'test', limits = {}) => {
    const res = await fetch(`${url}/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: keyName, ...limits }),
    });
    if (res.status !== 201) throw new Error(`issue key: HTTP ${res.status} ${await res.text()}`);
    return (await res.json()) as { id: string; key: string };
  };

  return {
    url,
    simulatorUrl,
    taskQueue,
    dataDir,
    databaseUrl,
    async issueKey(keyName, limits) {
      return (await issueKeyWithId(keyName, limits)).key;
    },
    issueKeyWithId,
    startWorker,
    async startApiReplica(extra = {}) {
      const replicaPort = await freePort();
      replicas.push(runNode('dist/src/api/server.js', { ...env, ...extra, PORT: String(replicaPort) }, `${name}-api-${replicas.length + 2}`));
      const replicaUrl = `http://127.0.0.1:${replicaPort}`;
      replicaUrls.push(replicaUrl);
      await apiUp(replicaUrl);
      return replicaUrl;
    },
    async killApiReplica(replicaUrl) {
      await replicas[replicaUrls.indexOf(replicaUrl)]?.kill();
    },
    async killWorker() {
      await worker?.kill();
      worker = null;
    },
    async restartApi() {
      await api.kill();
      api = runNode('dist/src/api/server.js', env, `${name}-api-run-${++apiRuns}`);
      await apiUp(url);
    },
    async stop() {
      await Promise.all([api.stop(), worker?.stop(), ...replicas.map((r) => r.stop())]);
    },
  };
}
