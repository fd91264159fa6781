import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import type { Logger } from 'pino';
import { SEARCH_ATTRIBUTES } from './search-attributes';

export interface DevServerOptions {
  cliPath: string;
  dataDir: string;
  port: number;
  uiPort: number;
  namespace: string;
  logger: Logger;
  headless?: boolean;
}

export interface DevServer {
  address: string;
  uiUrl: string;
  /** The server process, for the benchmarks' CPU accounting. */
  pid: number | undefined;
  stop(): Promise<void>;
}

/** The `temporal server start-dev` arguments for these options. */
export function devServerArgs(opts: Omit<DevServerOptions, 'cliPath' | 'logger'>): string[] {
  return [
    'server', 'start-dev',
    '--ip', '127.0.0.1',
    '--port', String(opts.port),
    '--ui-port', String(opts.uiPort),
    '--db-filename', path.join(opts.dataDir, 'temporal.sqlite'),
    '--sqlite-pragma', 'journal_mode=wal',
    '--sqlite-pragma', 'synchronous=normal',
    '--log-level', 'warn',
    '--ui-disable-news-fetch',
    // One partition per task queue. With the default four, a workflow task retried after a
    // timeout lands in a partition's backlog and waits until one of the worker's few
    // non-sticky pollers happens to poll that partition: measured 130-200 s for the one task
    // in a thousand whose workflow task timed out under load. One embedded worker gains
    // nothing from partitions.
    '--dynamic-config-value', 'matching.numTaskqueueReadPartitions=1',
    '--dynamic-config-value', 'matching.numTaskqueueWritePartitions=1',
    ...SEARCH_ATTRIBUTES.flatMap((sa) => ['--search-attribute', `${sa.name}=Keyword`]),
    ...(opts.namespace !== 'default' ? ['--namespace', opts.namespace] : []),
    ...(opts.headless ? ['--headless'] : []),
  ];
}

/**
 * The embedded Temporal: `temporal server start-dev` with its state in a SQLite file under
 * DATA_DIR (WAL journal, so a crash loses no committed workflow state), the Web UI, and the
 * gateway's search attributes registered. Starting again on the same file resumes every
 * task that was in flight.
 */
export async function startDevServer(opts: DevServerOptions): Promise<DevServer> {
  if (!fs.existsSync(opts.cliPath)) {
    throw new Error(`The temporal CLI is missing at ${opts.cliPath}; run \`npm run setup\` (or set TEMPORAL_ADDRESS).`);
  }
  fs.mkdirSync(opts.dataDir, { recursive: true });
  const args = devServerArgs(opts);
  const logFile = fs.openSync(path.join(opts.dataDir, 'temporal-server.log'), 'a');
  const child = spawn(opts.cliPath, args, { stdio: ['ignore', logFile, logFile] });
  fs.closeSync(logFile);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const address = `127.0.0.1:${opts.port}`;
  try {
    await waitForServer(address, exited);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  opts.logger.info({ address, ui: `http://localhost:${opts.uiPort}` }, 'temporal dev server ready');
  return { address, uiUrl: `http://localhost:${opts.uiPort}`, pid: child.pid, stop: () => stopChild(child, exited) };
}

async function waitForServer(address: string, exited: Promise<number | null>): Promise<void> {
  const deadline = Date.now() + 60_000;
  let lastError: unknown;
  let dead = false;
  void exited.then(() => (dead = true));
  while (Date.now() < deadline && !dead) {
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.withDeadline(Date.now() + 2000, () => connection.workflowService.getSystemInfo({}));
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      lastError = err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  if (dead) throw new Error('the temporal dev server exited during start-up; see temporal-server.log in DATA_DIR');
  throw new Error(`the temporal dev server did not become ready: ${String(lastError)}`);
}

async function stopChild(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}
