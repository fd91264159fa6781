/**
 * npm run bench:memory -- [--settle-seconds 30] [--restart] [--load-seconds 0]
 *
 * The memory `npm start` takes: runs `node dist/src/main.js` on a fresh data folder and ports
 * of its own (the dev server, the simulator and the store process as its children, as a user
 * gets them), waits until it is ready and then --settle-seconds idle, and prints each process's
 * RSS (split into anonymous and file-backed pages) and PSS, and the tree's sums. RSS counts the
 * pages that processes share (the node binary's code, mapped by each node process) once per
 * process; PSS divides them among the processes that map them, so the PSS sum is what the tree
 * costs the machine. `--restart` stops it and measures a second start on the same data folder
 * (an existing store and dev server database, as after a reboot). `--load-seconds N` then
 * drives text saturation through it (64 connections, closed loop, N seconds for each of messages
 * and chat, plain and streamed) and prints each process's peak RSS and the tree's peak sums,
 * sampled every 250 ms.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { projectRoot } from '../src/config/paths';
import { freePort, waitFor } from '../test/support/ports';
import { runNode, type Child } from '../test/support/processes';
import { ADMIN_TOKEN, embeddedEnv } from '../test/support/stack';
import { BenchChildren } from './child-guard';
import { commOf, statusMiB, treePids } from './proc-stats';
import { closedLoop, MODES, PROTOCOLS, scenario, type Target } from './text-load';

interface Options {
  settleSeconds: number;
  restart: boolean;
  loadSeconds: number;
}

function secondsOption(argv: string[], name: string, fallback: number): number {
  const i = argv.indexOf(name);
  const value = i >= 0 ? Number(argv[i + 1]) : fallback;
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} takes a number of seconds`);
  return value;
}

function parseArgs(argv: string[]): Options {
  return {
    settleSeconds: secondsOption(argv, '--settle-seconds', 30),
    restart: argv.includes('--restart'),
    loadSeconds: secondsOption(argv, '--load-seconds', 0),
  };
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

/**
 * Text saturation through the gateway while the tree's memory is sampled: each process's peak
 * RSS and PSS, and the peak of the sums (taken at one instant, not the sum of the peaks).
 */
async function measureUnderLoad(root: number, url: string, seconds: number): Promise<void> {
  const res = await fetch(`${url}/admin/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench-memory' }),
  });
  if (res.status !== 201) throw new Error(`issue key: HTTP ${res.status} ${await res.text()}`);
  const { key } = (await res.json()) as { key: string };
  const peaks = new Map<number, { rss: number; pss: number }>();
  let treeRss = 0;
  let treePss = 0;
  const sample = () => {
    let rss = 0;
    let pss = 0;
    for (const pid of treePids(root)) {
      const r = statusMiB(pid, 'VmRSS');
      const p = rollupMiB(pid, 'Pss');
      if (Number.isNaN(r)) continue;
      const peak = peaks.get(pid) ?? { rss: 0, pss: 0 };
      peaks.set(pid, { rss: Math.max(peak.rss, r), pss: Math.max(peak.pss, Number.isNaN(p) ? 0 : p) });
      rss += r;
      pss += Number.isNaN(p) ? 0 : p;
    }
    treeRss = Math.max(treeRss, rss);
    treePss = Math.max(treePss, pss);
  };
  const timer = setInterval(sample, 250);
  const { hostname, port } = new URL(url);
  const target: Target = { name: 'gateway', host: hostname, port: Number(port), agent: new http.Agent({ keepAlive: true, maxSockets: 64 }) };
  const served: string[] = [];
  try {
    for (const protocol of PROTOCOLS) {
      for (const mode of MODES) {
        const outcomes = await closedLoop(target, scenario(protocol, mode, key), 64, seconds);
        const ok = outcomes.filter((o) => o.error === null).length;
        served.push(`${protocol} ${mode} ${(ok / seconds).toFixed(0)} req/s (${outcomes.length - ok} failed)`);
      }
    }
  } finally {
    clearInterval(timer);
    target.agent.destroy();
  }
  console.log(`\nunder text saturation, 64 connections, ${seconds} s each: ${served.join(', ')}`);
  console.log(`${'process (peak MiB)'.padEnd(26)}     rss     pss`);
  for (const [pid, peak] of peaks) console.log(`${roleOf(pid, root).padEnd(26)} ${mib(peak.rss)} ${mib(peak.pss)}`);
  console.log(`${'the tree (peak of sums)'.padEnd(26)} ${mib(treeRss)} ${mib(treePss)}`);
}

const bench = new BenchChildren('npm start');

/**
 * The variables `npm start` sets on the gateway's command line in package.json (MALLOC_ARENA_MAX),
 * so the bench measures the process as users get it.
 */
function startScriptEnv(): Record<string, string> {
  const pkg = JSON.parse(fs.readFileSync(path.join(projectRoot(), 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const command = /(?:^|&&\s*)((?:\w+=\S+\s+)*)node dist\/src\/main\.js/.exec(pkg.scripts.start ?? '');
  if (!command) throw new Error('package.json: the start script does not run node dist/src/main.js');
  return Object.fromEntries(
    (command[1] ?? '')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]),
  );
}

async function startAndMeasure(env: Record<string, string>, label: string, settleSeconds: number, loadSeconds: number): Promise<Child> {
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
  if (loadSeconds > 0) await measureUnderLoad(gateway.proc.pid!, url, loadSeconds);
  return gateway;
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const dataDir = path.join(projectRoot(), '.bench-data', `memory-${Date.now()}`);
  fs.mkdirSync(dataDir, { recursive: true });
  bench.removeAtEnd(dataDir);
  const env = await embeddedEnv(dataDir, { ...startScriptEnv(), ADMIN_TOKEN, SIMULATOR_PORT: String(await freePort()), LOG_LEVEL: 'warn' });
  const first = await startAndMeasure(env, 'npm start on a new data folder', opts.settleSeconds, opts.loadSeconds);
  if (opts.restart) {
    await first.stop(30_000);
    await startAndMeasure(env, 'npm start again on the same data folder', opts.settleSeconds, 0);
  }
}

bench.run(main);
