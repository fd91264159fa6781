/**
 * npm run bench:memory -- [--settle-seconds 30] [--restart] [--load-seconds 0] [--soak-minutes 0 [--soak-rate 300]]
 *
 * The memory `npm start` takes: runs `node dist/src/main.js` on a fresh data folder and ports
 * of its own (the simulator inside it, the dev server and the store process as its children,
 * as a user gets them), waits until it is ready and then --settle-seconds idle, and prints each process's
 * RSS (split into anonymous and file-backed pages) and PSS, and the tree's sums. RSS counts the
 * pages that processes share (the node binary's code, mapped by each node process) once per
 * process; PSS divides them among the processes that map them, so the PSS sum is what the tree
 * costs the machine. `--restart` stops it and measures a second start on the same data folder
 * (an existing store and dev server database, as after a reboot). `--load-seconds N` then
 * drives text saturation through it (64 connections, closed loop, N seconds for each of messages
 * and chat, plain and streamed) and prints each process's peak RSS and the tree's peak sums,
 * sampled every 250 ms. `--soak-minutes M` then sends text at `--soak-rate` requests/s (open
 * loop, the four kinds in turn, SOAK_SLICE_SECONDS each) for M minutes and prints, per slice, the
 * requests so far, the gateway's RSS and its JavaScript heap in use, and then how much each grew
 * per 100,000 requests between the first and the last quarter of the soak: what a leak would
 * show, where a saturation peak cannot.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { projectRoot } from '../src/config/paths';
import { freePort, waitFor } from '../test/support/ports';
import { runNode, type Child } from '../test/support/processes';
import { ADMIN_TOKEN, embeddedEnv } from '../test/support/stack';
import { numberOption, optionOf } from './ab-options';
import { BenchChildren } from './child-guard';
import { commOf, statusMiB, treePids } from './proc-stats';
import { scriptCommand } from './script-command';
import { closedLoop, MODES, openLoop, PROTOCOLS, scenario, type Target } from './text-load';

interface Options {
  settleSeconds: number;
  restart: boolean;
  loadSeconds: number;
  soakMinutes: number;
  soakRate: number;
}

function parseArgs(argv: string[]): Options {
  const get = optionOf(argv);
  return {
    settleSeconds: numberOption(get, 'settle-seconds', '30', 0),
    restart: argv.includes('--restart'),
    loadSeconds: numberOption(get, 'load-seconds', '0', 0),
    soakMinutes: numberOption(get, 'soak-minutes', '0', 0),
    soakRate: numberOption(get, 'soak-rate', '300', 1),
  };
}

/** How long the soak sends one kind of request before the next; a sample is taken between slices. */
const SOAK_SLICE_SECONDS = 15;

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

/** What a process is, from its command line: the gateway, the store process, the dev server. */
function roleOf(pid: number, root: number): string {
  if (pid === root) return 'gateway (API, worker, simulator)';
  let cmdline = '';
  try {
    cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    // exited meanwhile
  }
  if (cmdline.includes('embedded-server')) return 'store process (PGlite)';
  if (cmdline.includes('start-dev')) return 'Temporal dev server';
  return commOf(pid);
}

const mib = (v: number) => v.toFixed(1).padStart(7);
/** The widest label: 'gateway (API, worker, simulator)'. */
const LABEL_WIDTH = 34;

interface ProcessMemory {
  pid: number;
  rss: number;
  /** 0 when it cannot be read. */
  pss: number;
}

/** Each live process of the tree with its RSS and PSS (MiB), and their sums. */
function treeMemory(root: number): { processes: ProcessMemory[]; rss: number; pss: number } {
  const processes = treePids(root).flatMap((pid): ProcessMemory[] => {
    const rss = statusMiB(pid, 'VmRSS');
    const pss = rollupMiB(pid, 'Pss');
    return Number.isNaN(rss) ? [] : [{ pid, rss, pss: Number.isNaN(pss) ? 0 : pss }];
  });
  return { processes, rss: processes.reduce((s, p) => s + p.rss, 0), pss: processes.reduce((s, p) => s + p.pss, 0) };
}

function report(root: number, label: string): void {
  console.log(`\n${label}`);
  console.log(`${'process'.padEnd(LABEL_WIDTH)}     rss    anon    file     pss`);
  const tree = treeMemory(root);
  for (const { pid, rss, pss } of tree.processes) {
    console.log(`${roleOf(pid, root).padEnd(LABEL_WIDTH)} ${mib(rss)} ${mib(statusMiB(pid, 'RssAnon'))} ${mib(statusMiB(pid, 'RssFile'))} ${mib(pss)}`);
  }
  console.log(`${'the tree'.padEnd(LABEL_WIDTH)} ${mib(tree.rss)} ${' '.repeat(15)} ${mib(tree.pss)}`);
}

/**
 * Text saturation through the gateway while the tree's memory is sampled: each process's peak
 * RSS and PSS, and the peak of the sums (taken at one instant, not the sum of the peaks).
 */
async function measureUnderLoad(root: number, url: string, seconds: number): Promise<void> {
  const key = await benchKey(url, 'bench-memory');
  const peaks = new Map<number, { rss: number; pss: number }>();
  let treeRss = 0;
  let treePss = 0;
  const sample = () => {
    const tree = treeMemory(root);
    for (const { pid, rss, pss } of tree.processes) {
      const peak = peaks.get(pid) ?? { rss: 0, pss: 0 };
      peaks.set(pid, { rss: Math.max(peak.rss, rss), pss: Math.max(peak.pss, pss) });
    }
    treeRss = Math.max(treeRss, tree.rss);
    treePss = Math.max(treePss, tree.pss);
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
  console.log(`${'process (peak MiB)'.padEnd(LABEL_WIDTH)}     rss     pss`);
  for (const [pid, peak] of peaks) console.log(`${roleOf(pid, root).padEnd(LABEL_WIDTH)} ${mib(peak.rss)} ${mib(peak.pss)}`);
  console.log(`${'the tree (peak of sums)'.padEnd(LABEL_WIDTH)} ${mib(treeRss)} ${mib(treePss)}`);
}

/** A bench key of no quota and no limit, issued through the admin API. */
async function benchKey(url: string, name: string): Promise<string> {
  const res = await fetch(`${url}/admin/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  if (res.status !== 201) throw new Error(`issue key: HTTP ${res.status} ${await res.text()}`);
  return ((await res.json()) as { key: string }).key;
}

/** The gateway process's JavaScript heap in use, MiB, from its /metrics (prom-client's nodejs_heap_size_used_bytes). */
async function heapUsedMiB(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
  const line = text.split('\n').find((l) => l.startsWith('nodejs_heap_size_used_bytes '));
  return line ? Number(line.split(' ')[1]) / 2 ** 20 : NaN;
}

interface SoakSample {
  seconds: number;
  requests: number;
  failed: number;
  rss: number;
  heap: number;
}

/** Least-squares slope of y over x. */
function slope(points: readonly { x: number; y: number }[]): number {
  const n = points.length;
  const mx = points.reduce((a, p) => a + p.x, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  const sxx = points.reduce((a, p) => a + (p.x - mx) ** 2, 0);
  return sxx === 0 ? 0 : points.reduce((a, p) => a + (p.x - mx) * (p.y - my), 0) / sxx;
}

/**
 * Text at a fixed rate for `minutes`, the gateway's RSS and heap sampled between slices. The
 * heap in use swings with each collection, so its growth is read from each quarter's least
 * sample (what survived the collections), and the RSS's from the samples' trend.
 */
async function soak(root: number, url: string, minutes: number, rate: number): Promise<void> {
  const key = await benchKey(url, 'bench-memory-soak');
  const { hostname, port } = new URL(url);
  const target: Target = { name: 'gateway', host: hostname, port: Number(port), agent: new http.Agent({ keepAlive: true, maxSockets: 256 }) };
  const kinds = PROTOCOLS.flatMap((protocol) => MODES.map((mode) => ({ label: `${protocol} ${mode}`, sc: scenario(protocol, mode, key) })));
  const slices = Math.max(4, Math.round((minutes * 60) / SOAK_SLICE_SECONDS));
  const samples: SoakSample[] = [];
  let requests = 0;
  let failed = 0;
  const started = Date.now();
  console.log(`\nsoak: ${rate} text requests/s (open loop), ${SOAK_SLICE_SECONDS} s of each kind in turn, ${slices} slices`);
  console.log('   time  requests  failed   rss MiB  heap MiB  slice');
  try {
    for (let i = 0; i < slices; i++) {
      const kind = kinds[i % kinds.length]!;
      const outcomes = await openLoop(target, kind.sc, rate, SOAK_SLICE_SECONDS);
      requests += outcomes.length;
      failed += outcomes.filter((o) => o.error !== null).length;
      const sample = { seconds: (Date.now() - started) / 1000, requests, failed, rss: statusMiB(root, 'VmRSS'), heap: await heapUsedMiB(url) };
      samples.push(sample);
      console.log(
        `${sample.seconds.toFixed(0).padStart(6)} s ${String(requests).padStart(9)} ${String(failed).padStart(7)} ${mib(sample.rss)}   ${mib(sample.heap)}  ${kind.label}`,
      );
    }
  } finally {
    target.agent.destroy();
  }
  const quarter = Math.max(1, Math.floor(samples.length / 4));
  const first = samples.slice(0, quarter);
  const last = samples.slice(-quarter);
  const floor = (part: SoakSample[]) => Math.min(...part.map((p) => p.heap));
  const midRequests = (part: SoakSample[]) => part.reduce((a, p) => a + p.requests, 0) / part.length;
  const per100k = 100_000 / (midRequests(last) - midRequests(first));
  const rssTrend = slope(samples.slice(quarter).map((p) => ({ x: p.requests, y: p.rss }))) * 100_000;
  console.log(
    `growth per 100,000 requests, first quarter -> last: heap in use (each quarter's least) ${((floor(last) - floor(first)) * per100k).toFixed(2)} MiB ` +
      `(${floor(first).toFixed(1)} -> ${floor(last).toFixed(1)}); RSS trend after the first quarter ${rssTrend.toFixed(2)} MiB ` +
      `(${first[0]!.rss.toFixed(1)} -> ${last[last.length - 1]!.rss.toFixed(1)}); ${requests} requests, ${failed} failed`,
  );
}

const bench = new BenchChildren('npm start');

/** What to measure after a start: idle for `settleSeconds`, then the load and the soak, each when above 0. */
type Phases = Pick<Options, 'settleSeconds' | 'loadSeconds' | 'soakMinutes' | 'soakRate'>;

async function startAndMeasure(env: Record<string, string>, nodeArgs: string[], label: string, phases: Phases): Promise<Child> {
  const { settleSeconds, loadSeconds, soakMinutes, soakRate } = phases;
  const gateway = bench.add(runNode('dist/src/main.js', env, path.join(env.DATA_DIR!, 'gateway.log'), undefined, nodeArgs));
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
  if (soakMinutes > 0) await soak(gateway.proc.pid!, url, soakMinutes, soakRate);
  return gateway;
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const dataDir = path.join(projectRoot(), '.bench-data', `memory-${Date.now()}`);
  fs.mkdirSync(dataDir, { recursive: true });
  bench.removeAtEnd(dataDir);
  // As `npm start` runs it (package.json), so the bench measures the process as users get it.
  const start = scriptCommand(projectRoot(), 'start', true);
  const env = await embeddedEnv(dataDir, { ...start.env, ADMIN_TOKEN, SIMULATOR_PORT: String(await freePort()), LOG_LEVEL: 'warn' });
  const first = await startAndMeasure(env, start.nodeArgs, 'npm start on a new data folder', opts);
  if (opts.restart) {
    await first.stop(30_000);
    await startAndMeasure(env, start.nodeArgs, 'npm start again on the same data folder', { ...opts, loadSeconds: 0, soakMinutes: 0 });
  }
}

bench.run(main);
