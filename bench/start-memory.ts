/**
 * npm run bench:memory -- [--settle-seconds 30] [--restart]
 *
 * The memory `npm start` takes: runs `node dist/src/main.js` on a fresh data folder and ports
 * of its own (the dev server, the simulator and the store process as its children, as a user
 * gets them), waits until it is ready and then --settle-seconds idle, and prints each process's
 * RSS (split into anonymous and file-backed pages) and PSS, and the tree's sums. RSS counts the
 * pages that processes share (the node binary's code, mapped by each node process) once per
 * process; PSS divides them among the processes that map them, so the PSS sum is what the tree
 * costs the machine. `--restart` stops it and measures a second start on the same data folder
 * (an existing store and dev server database, as after a reboot).
 */
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../src/config/paths';
import { freePort, waitFor } from '../test/support/ports';
import { runNode, type Child } from '../test/support/processes';
import { embeddedEnv } from '../test/support/stack';
import { BenchChildren } from './child-guard';
import { commOf, statusMiB, treePids } from './proc-stats';

interface Options {
  settleSeconds: number;
  restart: boolean;
}

function parseArgs(argv: string[]): Options {
  const i = argv.indexOf('--settle-seconds');
  const settleSeconds = i >= 0 ? Number(argv[i + 1]) : 30;
  if (!Number.isFinite(settleSeconds) || settleSeconds < 0) throw new Error('--settle-seconds takes a number of seconds');
  return { settleSeconds, restart: argv.includes('--restart') };
}

/** A field of /proc/<pid>/smaps_rollup in MiB (Pss), NaN once the process has gone. */
function rollupMiB(pid: number, field: string): number {
  try {
    const line = fs
      .readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${field}:`));
    return line ? Number(line.split(/\s+/)[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** What a process is, from its command line: the gateway, the store process, the simulator, the dev server. */
function roleOf(pid: number, root: number): string {
  if (pid === root) return 'gateway (API + worker)';
  let cmdline = '';
  try {
    cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    // exited meanwhile
  }
  if (cmdline.includes('embedded-server')) return 'store process (PGlite)';
  if (cmdline.includes('simulator')) return 'provider simulator';
  if (cmdline.includes('start-dev')) return 'Temporal dev server';
  return commOf(pid);
}

const mib = (v: number) => v.toFixed(1).padStart(7);

function report(root: number, label: string): void {
  console.log(`\n${label}`);
  console.log(`${'process'.padEnd(26)}     rss    anon    file     pss`);
  let rss = 0;
  let pss = 0;
  for (const pid of treePids(root)) {
    const r = statusMiB(pid, 'VmRSS');
    if (Number.isNaN(r)) continue;
    const p = rollupMiB(pid, 'Pss');
    rss += r;
    pss += Number.isNaN(p) ? 0 : p;
    console.log(`${roleOf(pid, root).padEnd(26)} ${mib(r)} ${mib(statusMiB(pid, 'RssAnon'))} ${mib(statusMiB(pid, 'RssFile'))} ${mib(p)}`);
  }
  console.log(`${'the tree'.padEnd(26)} ${mib(rss)} ${' '.repeat(15)} ${mib(pss)}`);
}

const bench = new BenchChildren('npm start');

async function startAndMeasure(env: Record<string, string>, label: string, settleSeconds: number): Promise<Child> {
  const gateway = bench.add(runNode('dist/src/main.js', env, path.join(env.DATA_DIR!, 'gateway.log')));
  const url = `http://127.0.0.1:${env.PORT}`;
  await waitFor(
    'the gateway ready',
    async () => {
      if (gateway.proc.exitCode !== null) throw new Error(`npm start exited with ${gateway.proc.exitCode}; see ${env.DATA_DIR}/gateway.log`);
      return (await fetch(`${url}/readyz`).catch(() => null))?.status === 200;
    },
    180_000,
    500,
  );
  await new Promise((r) => setTimeout(r, settleSeconds * 1000));
  report(gateway.proc.pid!, `${label}, ready and ${settleSeconds} s idle (MiB)`);
  return gateway;
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const dataDir = path.join(projectRoot(), '.bench-data', `memory-${Date.now()}`);
  fs.mkdirSync(dataDir, { recursive: true });
  bench.removeAtEnd(dataDir);
  const env = await embeddedEnv(dataDir, { SIMULATOR_PORT: String(await freePort()), LOG_LEVEL: 'warn' });
  const first = await startAndMeasure(env, 'npm start on a new data folder', opts.settleSeconds);
  if (opts.restart) {
    await first.stop(30_000);
    await startAndMeasure(env, 'npm start again on the same data folder', opts.settleSeconds);
  }
}

bench.run(main);
