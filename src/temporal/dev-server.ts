import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import type { Logger } from 'pino';
import { SEARCH_ATTRIBUTES } from './search-attributes';
import { isProcessAlive } from '../system/processes';

export interface DevServerOptions {
  cliPath: string;
  dataDir: string;
  port: number;
  uiPort: number;
  /** The server's own /metrics port (TEMPORAL_DEV_METRICS_PORT); 0 or unset = a random free one. */
  metricsPort?: number;
  namespace: string;
  logger: Logger;
  headless?: boolean;
  /** Aborting gives up a start in progress (the child is killed, the start rejects). */
  signal?: AbortSignal;
}

/** How the server process ended: its exit code, or the signal that killed it. */
export interface DevServerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface DevServer {
  address: string;
  uiUrl: string;
  /** The server process: the benchmarks' CPU accounting, the supervisor's log lines. */
  pid: number | undefined;
  /** Settles when the server process ends, for whatever reason (stop() included). */
  exited: Promise<DevServerExit>;
  stop(): Promise<void>;
}

/**
 * The server process ended before it answered. Often transient: the CLI picks its internal ports
 * (history, matching, membership) free at one instant and binds them the next, so a process
 * starting beside it can take one first ("address already in use").
 */
export class DevServerExitedAtStart extends Error {}

/** How long a start may take before it counts as failed. */
const START_DEADLINE_MS = 60_000;

/** The `temporal server start-dev` arguments for these options. */
export function devServerArgs(opts: Omit<DevServerOptions, 'cliPath' | 'logger' | 'signal'>): string[] {
  return [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(opts.port),
    '--ui-port',
    String(opts.uiPort),
    '--db-filename',
    dbFile(opts.dataDir),
    '--sqlite-pragma',
    'journal_mode=wal',
    '--sqlite-pragma',
    'synchronous=normal',
    '--log-level',
    'warn',
    '--ui-disable-news-fetch',
    // One partition per task queue. With the default four, a workflow task retried after a
    // timeout lands in a partition's backlog and waits until one of the worker's few
    // non-sticky pollers happens to poll that partition: measured 130-200 s for the one task
    // in a thousand whose workflow task timed out under load. One embedded worker gains
    // nothing from partitions.
    '--dynamic-config-value',
    'matching.numTaskqueueReadPartitions=1',
    '--dynamic-config-value',
    'matching.numTaskqueueWritePartitions=1',
    ...SEARCH_ATTRIBUTES.flatMap((sa) => ['--search-attribute', `${sa.name}=Keyword`]),
    ...(opts.namespace !== 'default' ? ['--namespace', opts.namespace] : []),
    ...(opts.headless ? ['--headless'] : []),
    ...(opts.metricsPort ? ['--metrics-port', String(opts.metricsPort)] : []),
  ];
}

const dbFile = (dataDir: string) => path.join(dataDir, 'temporal.sqlite');
const pidFile = (dataDir: string) => path.join(dataDir, 'temporal-server.pid');

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
  await stopOrphan(opts);
  const args = devServerArgs(opts);
  const logFile = fs.openSync(path.join(opts.dataDir, 'temporal-server.log'), 'a');
  const child = spawn(opts.cliPath, args, { stdio: ['ignore', logFile, logFile] });
  fs.closeSync(logFile);
  const exited = new Promise<DevServerExit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  if (child.pid !== undefined) fs.writeFileSync(pidFile(opts.dataDir), JSON.stringify({ server: child.pid, owner: process.pid }));
  const address = `127.0.0.1:${opts.port}`;
  try {
    await waitForServer(address, exited, opts.signal);
  } catch (err) {
    child.kill('SIGKILL');
    await exited;
    throw err;
  }
  opts.logger.info(
    {
      address,
      ui: `http://localhost:${opts.uiPort}`,
      metrics: opts.metricsPort ? `http://127.0.0.1:${opts.metricsPort}/metrics` : 'random port',
      serverPid: child.pid,
    },
    'temporal dev server ready',
  );
  return {
    address,
    uiUrl: `http://localhost:${opts.uiPort}`,
    pid: child.pid,
    exited,
    stop: async () => {
      await stopChild(child, exited);
      removePidFile(opts.dataDir, child.pid);
    },
  };
}

/**
 * A dev server left running on this DATA_DIR's SQLite file by a gateway process that was
 * killed outright (SIGKILL reaches the parent only) holds the port and the file: stopped
 * here, so the restarted gateway starts its own instead of failing on a taken port. Only a
 * process whose command line is `temporal server start-dev` on this very file, and whose
 * owner (the gateway that started it, also in the pid file) is gone, is touched; a live owner
 * is another gateway on the same DATA_DIR, which is refused.
 */
async function stopOrphan(opts: DevServerOptions): Promise<void> {
  let record: { server: number; owner: number };
  try {
    const parsed: unknown = JSON.parse(fs.readFileSync(pidFile(opts.dataDir), 'utf8'));
    if (!isPidRecord(parsed)) return;
    record = parsed;
  } catch {
    return;
  }
  const pid = record.server;
  const isOurs = () => {
    try {
      const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      return argv.includes('start-dev') && argv.includes(dbFile(opts.dataDir));
    } catch {
      return false;
    }
  };
  if (pid <= 1 || !isOurs()) return;
  if (record.owner !== process.pid && isProcessAlive(record.owner)) {
    throw new Error(`The temporal dev server on ${dbFile(opts.dataDir)} belongs to the running gateway process ${record.owner}: one gateway per DATA_DIR.`);
  }
  opts.logger.warn({ serverPid: pid }, 'stopping a temporal dev server left running on this DATA_DIR by an earlier process');
  const deadline = Date.now() + 10_000;
  signalPid(pid, 'SIGTERM');
  while (isOurs() && Date.now() < deadline) await sleep(100);
  if (isOurs()) signalPid(pid, 'SIGKILL');
  while (isOurs()) await sleep(50);
}

function isPidRecord(value: unknown): value is { server: number; owner: number } {
  if (typeof value !== 'object' || value === null) return false;
  const { server, owner } = value as Record<string, unknown>;
  return Number.isInteger(server) && Number.isInteger(owner);
}

function signalPid(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone already
  }
}

function removePidFile(dataDir: string, pid: number | undefined): void {
  try {
    const record: unknown = JSON.parse(fs.readFileSync(pidFile(dataDir), 'utf8'));
    if (isPidRecord(record) && record.server === pid) fs.rmSync(pidFile(dataDir), { force: true });
  } catch {
    // no pid file: nothing to remove
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitForServer(address: string, exited: Promise<DevServerExit>, signal: AbortSignal | undefined): Promise<void> {
  const deadline = Date.now() + START_DEADLINE_MS;
  let lastError: unknown;
  let exit: DevServerExit | undefined;
  void exited.then((e) => (exit = e));
  while (Date.now() < deadline && !exit && !signal?.aborted) {
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.withDeadline(Date.now() + 2000, () => connection.workflowService.getSystemInfo({}));
        if (!exit) return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      lastError = err;
      await sleep(250);
    }
  }
  if (signal?.aborted) throw new Error('the temporal dev server start was given up (stopping)');
  if (exit) {
    const how = exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
    throw new DevServerExitedAtStart(`the temporal dev server exited during start-up (${how}); see temporal-server.log in DATA_DIR`);
  }
  throw new Error(`the temporal dev server did not become ready within ${START_DEADLINE_MS / 1000} s: ${String(lastError)}`);
}

async function stopChild(child: ChildProcess, exited: Promise<DevServerExit>): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
  await exited;
}
