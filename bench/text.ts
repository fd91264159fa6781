/**
 * npm run bench:text -- [--rate 1000] [--seconds 10] [--warmup-seconds 2] [--concurrency 64]
 *                        [--protocols anthropic,openai] [--modes plain,stream] [--targets direct,floor,gateway]
 *                        [--log-level info] [--cpu-prof DIR] [--billing on|off]
 *
 * The overhead of the text proxy: the same requests sent straight to the provider simulator
 * ("direct"), through a bare node:http proxy ("floor", bench/floor-proxy.ts: what Node's HTTP
 * stack alone costs on this machine) and through the gateway API process ("gateway") in one run, for Anthropic
 * Messages (POST /v1/messages) and OpenAI chat completions (POST /v1/chat/completions), each
 * streamed and not. Per protocol x mode x target:
 *   warm-up   --warmup-seconds at the fixed rate, discarded;
 *   fixed     open loop at --rate req/s for --seconds, sends on a fixed timetable;
 *   sat       closed loop, --concurrency connections each sending its next request as soon as
 *             the previous one ended, for --seconds.
 * and prints latency p50/p99 (request sent -> last byte of the response), the same measured from
 * the scheduled send time (fixed rate; free of coordinated omission), time to first byte of
 * streams, achieved req/s, errors, CPU time per request of the gateway, simulator and load
 * generator, the CPU other processes used meanwhile (a busy machine makes a row meaningless),
 * and peak RSS; then floor - direct and gateway - direct ("added").
 *
 * The simulator and the gateway are child processes; the load generator runs in this process
 * (node:http, one keep-alive agent per target), which does nothing else while a phase runs.
 * Everything shares the machine's cores. Results also go to bench-results/text-<time>.json.
 * See docs/bench-text.md.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../src/config/paths';
import { freePort, waitFor } from '../test/support/ports';
import { runNode } from '../test/support/processes';
import { logLevelOption } from './ab-options';
import { billingModeOf, type BillingMode } from './billing';
import { BenchChildren } from './child-guard';
import { writeBenchResults } from './results';
import { runScript } from './script-command';
import { startTextGateway } from './text-gateway';
import { CLOCK_TICKS, cpuMs, machineBusyMs, selfCpuMs, statusMiB, treeCpu, treeCpuDelta, treePids, treeRssMiB } from './proc-stats';
import {
  closedLoop,
  dist,
  type Dist,
  fire,
  listOf,
  MODES,
  now,
  openLoop,
  outcomeStats,
  type OutcomeStats,
  type PhaseKind,
  type PhaseOf,
  PROTOCOLS,
  scenario,
  toMs,
  type Mode,
  type Outcome,
  type Protocol,
  type Scenario,
  type Target,
} from './text-load';

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------

const TARGETS = ['direct', 'floor', 'gateway'] as const;
type TargetName = (typeof TARGETS)[number];

interface Options {
  rate: number;
  seconds: number;
  warmupSeconds: number;
  concurrency: number;
  protocols: Protocol[];
  modes: Mode[];
  targets: TargetName[];
  logLevel: string;
  cpuProfDir: string | null;
  billing: BillingMode;
}

function parseArgs(argv: string[]): Options {
  const get = (name: string, fallback: string) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 && argv[i + 1] ? argv[i + 1]! : fallback;
  };
  const positive = (name: string, fallback: string, integer = false) => {
    const value = Number(get(name, fallback));
    if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value)))
      throw new Error(`--${name}: expected a positive ${integer ? 'integer' : 'number'}`);
    return value;
  };
  const logLevel = logLevelOption(get);
  const warmup = Number(get('warmup-seconds', '2'));
  if (!Number.isFinite(warmup) || warmup < 0) throw new Error('--warmup-seconds: expected a number >= 0');
  const cpuProf = get('cpu-prof', '');
  return {
    rate: positive('rate', '1000'),
    seconds: positive('seconds', '10'),
    warmupSeconds: warmup,
    concurrency: positive('concurrency', '64', true),
    protocols: listOf('protocols', get('protocols', PROTOCOLS.join(',')), PROTOCOLS),
    modes: listOf('modes', get('modes', MODES.join(',')), MODES),
    targets: listOf('targets', get('targets', TARGETS.join(',')), TARGETS),
    logLevel,
    cpuProfDir: cpuProf ? path.resolve(cpuProf) : null,
    billing: billingModeOf(get('billing', 'on')),
  };
}

// ---------------------------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------------------------

function timeline(outcomes: Outcome[], start: bigint): Array<[number, number]> {
  const buckets: Array<[number, number]> = [];
  for (const o of outcomes) {
    const i = Math.max(0, Math.floor(toMs(o.sent - start) / 100));
    while (buckets.length <= i) buckets.push([0, 0]);
    const b = buckets[i]!;
    b[0] += 1;
    b[1] = Math.max(b[1], Math.round(toMs(o.end - o.sent) * 100) / 100);
  }
  return buckets;
}

interface PhaseResult extends PhaseOf<TargetName>, OutcomeStats {
  /** ms the load generator sent late (fixed rate). */
  sendLag: Dist | null;
  /** Per 100 ms of send time: [requests sent, the slowest one's latency in ms]; shows whether the tail is stalls or spread. */
  timeline: Array<[number, number]>;
  /**
   * proxy: the target between the generator and the simulator (the gateway's API process and
   * the embedded store's process, or the floor proxy); store: the gateway's store process alone
   * (0 with PostgreSQL).
   */
  cpuMsPerRequest: { proxy: number; store: number; simulator: number; loadgen: number };
  /** CPU used by every other process on the machine during the phase, in % of one core. */
  otherCpuPercent: number;
  peakRssMiB: { gateway: number; simulator: number; loadgen: number };
}

function summarise(
  base: PhaseOf<TargetName>,
  outcomes: Outcome[],
  cpu: PhaseResult['cpuMsPerRequest'],
  otherCpuPercent: number,
  peakRssMiB: PhaseResult['peakRssMiB'],
): PhaseResult {
  const fixed = base.phase === 'fixed';
  const { stats, first } = outcomeStats(outcomes, fixed);
  return {
    ...base,
    ...stats,
    sendLag: fixed ? dist(outcomes.map((o) => toMs(o.sent - o.scheduled))) : null,
    timeline: timeline(outcomes, first),
    cpuMsPerRequest: cpu,
    otherCpuPercent,
    peakRssMiB,
  };
}

// ---------------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------------

const f2 = (v: number) => (Number.isNaN(v) ? 'n/a' : v.toFixed(2));
const signed = (v: number) => (Number.isNaN(v) ? 'n/a' : `${v >= 0 ? '+' : ''}${v.toFixed(2)}`);
const COLUMNS: Array<[string, number]> = [
  ['protocol', -10],
  ['mode', -7],
  ['phase', -12],
  ['target', -8],
  ['req/s', 8],
  ['p50', 7],
  ['p99', 7],
  ['sch p50', 8],
  ['sch p99', 8],
  ['ttfb p50', 9],
  ['ttfb p99', 9],
  ['errors', 7],
  ['px cpu', 7],
  ['st cpu', 7],
  ['sim cpu', 8],
  ['gen cpu', 8],
  ['gw rss', 7],
  ['other', 6],
];
const row = (cells: string[]) =>
  cells
    .map((c, i) => {
      const w = COLUMNS[i]![1];
      return w < 0 ? c.padEnd(-w) : c.padStart(w);
    })
    .join(' ');

function phaseLabel(r: PhaseResult): string {
  return r.phase === 'fixed' ? `${r.offeredRate}/s` : `sat c=${r.concurrency}`;
}

function printRow(r: PhaseResult): void {
  const stream = r.mode === 'stream';
  console.log(
    row([
      r.protocol,
      r.mode,
      phaseLabel(r),
      r.target,
      r.rps.toFixed(0),
      f2(r.latency.p50),
      f2(r.latency.p99),
      r.fromSchedule ? f2(r.fromSchedule.p50) : '',
      r.fromSchedule ? f2(r.fromSchedule.p99) : '',
      stream ? f2(r.firstByte.p50) : '',
      stream ? f2(r.firstByte.p99) : '',
      String(r.errors),
      r.target === 'direct' ? '' : f2(r.cpuMsPerRequest.proxy),
      r.target === 'gateway' ? f2(r.cpuMsPerRequest.store) : '',
      f2(r.cpuMsPerRequest.simulator),
      f2(r.cpuMsPerRequest.loadgen),
      r.target === 'gateway' ? r.peakRssMiB.gateway.toFixed(0) : '',
      Number.isNaN(r.otherCpuPercent) ? 'n/a' : `${Math.max(0, r.otherCpuPercent).toFixed(0)}%`,
    ]),
  );
  const kinds = Object.entries(r.errorKinds);
  if (kinds.length > 0) console.log(`${' '.repeat(28)}errors: ${kinds.map(([k, n]) => `${n} x ${k}`).join(', ')}`);
}

interface Added {
  protocol: Protocol;
  mode: Mode;
  phase: PhaseKind;
  p50: number;
  p99: number;
  fromScheduleP50: number | null;
  fromScheduleP99: number | null;
  firstByteP50: number;
  firstByteP99: number;
  /** proxy req/s / direct req/s */
  rpsRatio: number;
  /** Which proxy: the floor or the gateway. */
  target: TargetName;
}

/** What a proxy (the floor or the gateway) adds to direct in the same phase. */
function added(direct: PhaseResult, proxy: PhaseResult): Added {
  return {
    target: proxy.target,
    protocol: direct.protocol,
    mode: direct.mode,
    phase: direct.phase,
    p50: proxy.latency.p50 - direct.latency.p50,
    p99: proxy.latency.p99 - direct.latency.p99,
    fromScheduleP50: direct.fromSchedule && proxy.fromSchedule ? proxy.fromSchedule.p50 - direct.fromSchedule.p50 : null,
    fromScheduleP99: direct.fromSchedule && proxy.fromSchedule ? proxy.fromSchedule.p99 - direct.fromSchedule.p99 : null,
    firstByteP50: proxy.firstByte.p50 - direct.firstByte.p50,
    firstByteP99: proxy.firstByte.p99 - direct.firstByte.p99,
    rpsRatio: proxy.rps / direct.rps,
  };
}

function printAdded(a: Added): void {
  const stream = a.mode === 'stream';
  console.log(
    row([
      a.protocol,
      a.mode,
      a.phase === 'fixed' ? 'fixed' : 'sat',
      a.target === 'gateway' ? 'added' : `${a.target}+`,
      a.phase === 'saturation' ? `x${a.rpsRatio.toFixed(2)}` : '',
      signed(a.p50),
      signed(a.p99),
      a.fromScheduleP50 !== null ? signed(a.fromScheduleP50) : '',
      a.fromScheduleP99 !== null ? signed(a.fromScheduleP99) : '',
      stream ? signed(a.firstByteP50) : '',
      stream ? signed(a.firstByteP99) : '',
      '',
      '',
      '',
      '',
      '',
    ]),
  );
}

// ---------------------------------------------------------------------------------------------
// Orchestration
// ---------------------------------------------------------------------------------------------
const bench = new BenchChildren('the simulator and the gateway');

/** One request through the bench's own client: is this target answering this scenario at all? */
function probe(target: Target, sc: Scenario): Promise<string | null> {
  return new Promise((resolve) => fire(target, sc, now(), (o) => resolve(o.error)));
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const root = projectRoot();
  const startedAt = new Date();
  const dataDir = path.join(root, '.bench-data', `text-${startedAt.getTime()}`);
  fs.mkdirSync(dataDir, { recursive: true });
  bench.removeAtEnd(dataDir);
  const logs = {
    simulator: path.join(root, '.bench-data', 'text-simulator.log'),
    floor: path.join(root, '.bench-data', 'text-floor.log'),
    gateway: path.join(root, '.bench-data', 'text-gateway.log'),
  };
  for (const file of Object.values(logs)) fs.writeFileSync(file, ''); // runNode appends: each run's logs alone

  const simPort = await freePort();
  const simUrl = `http://127.0.0.1:${simPort}`;
  const sim = runNode('dist/simulator/main.js', { HOST: '127.0.0.1', SIMULATOR_PORT: String(simPort), LOG_LEVEL: 'warn' }, logs.simulator);
  bench.add(sim);
  await waitFor('simulator', async () => (await fetch(`${simUrl}/_sim/health`)).ok, 20_000);

  if (opts.cpuProfDir) fs.mkdirSync(opts.cpuProfDir, { recursive: true });
  const gw = await startTextGateway({
    bench,
    root,
    dataDir,
    simUrl,
    logLevel: opts.logLevel,
    log: logs.gateway,
    billing: opts.billing,
    what: 'gateway',
    nodeArgs: opts.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`] : [],
  });

  const floorPort = await freePort();
  const floor = opts.targets.includes('floor')
    ? bench.add(runScript('api', { FLOOR_PORT: String(floorPort), FLOOR_UPSTREAM: simUrl }, logs.floor, root, [], 'dist/bench/floor-proxy.js'))
    : null;
  // Through the floor to the simulator's health: it answers once both ends are up (waitFor retries what throws).
  if (floor) await waitFor('floor proxy', async () => (await fetch(`http://127.0.0.1:${floorPort}/_sim/health`)).ok, 20_000);

  const agentOptions: http.AgentOptions = { keepAlive: true, maxSockets: 256, maxFreeSockets: 256 };
  const targets: Record<TargetName, Target<TargetName>> = {
    direct: { name: 'direct', host: '127.0.0.1', port: simPort, agent: new http.Agent(agentOptions) },
    floor: { name: 'floor', host: '127.0.0.1', port: floorPort, agent: new http.Agent(agentOptions) },
    gateway: { name: 'gateway', host: '127.0.0.1', port: gw.port, agent: new http.Agent(agentOptions) },
  };
  const pids = { gateway: gw.child.proc.pid, simulator: sim.proc.pid, floor: floor?.proc.pid };
  // The gateway is its API process and the embedded store's process below it.
  const gatewayTree = () => (pids.gateway ? treePids(pids.gateway) : []);
  const gatewayRssAtStart = treeRssMiB(gatewayTree());

  console.log(
    `\nbench:text  fixed rate ${opts.rate} req/s (open loop) for ${opts.seconds} s after ${opts.warmupSeconds} s warm-up; saturation ${opts.concurrency} connections (closed loop) for ${opts.seconds} s; billing ${opts.billing}`,
  );
  const loadAtStart = os.loadavg()[0] ?? NaN;
  console.log(
    `gateway LOG_LEVEL=${opts.logLevel}; ${os.cpus().length} cores shared by the load generator (this process), the gateway and the simulator` +
      `; 1-min load average before the run ${loadAtStart.toFixed(2)}${opts.cpuProfDir ? `; gateway CPU profile to ${opts.cpuProfDir}` : ''}`,
  );

  /** Runs one measured phase with CPU and RSS accounting around it. */
  const measure = async (base: PhaseOf<TargetName>, run: () => Promise<Outcome[]>): Promise<PhaseResult> => {
    const peak = { gateway: 0, simulator: 0, loadgen: 0 };
    const sample = () => {
      peak.gateway = Math.max(peak.gateway, treeRssMiB(gatewayTree()));
      peak.simulator = Math.max(peak.simulator, statusMiB(pids.simulator, 'VmRSS'));
      peak.loadgen = Math.max(peak.loadgen, process.memoryUsage.rss() / 1048576);
    };
    const sampler = setInterval(sample, 250);
    const gatewayBefore = treeCpu(gatewayTree());
    const before = { simulator: cpuMs(pids.simulator), floor: cpuMs(pids.floor), loadgen: selfCpuMs(), machine: machineBusyMs(), at: now() };
    const outcomes = await run();
    const gatewayAfter = treeCpu(gatewayTree());
    const gatewayMs = treeCpuDelta(gatewayBefore, gatewayAfter);
    const apiMs = pids.gateway ? (gatewayAfter.get(pids.gateway) ?? 0) - (gatewayBefore.get(pids.gateway) ?? 0) : 0;
    const after = { simulator: cpuMs(pids.simulator), floor: cpuMs(pids.floor), loadgen: selfCpuMs(), machine: machineBusyMs(), at: now() };
    clearInterval(sampler);
    sample();
    const n = Math.max(1, outcomes.length);
    const floorMs = pids.floor ? after.floor - before.floor : 0;
    const cpu = {
      proxy: base.target === 'gateway' ? gatewayMs / n : base.target === 'floor' ? floorMs / n : NaN,
      store: base.target === 'gateway' ? (gatewayMs - apiMs) / n : NaN,
      simulator: (after.simulator - before.simulator) / n,
      loadgen: (after.loadgen - before.loadgen) / n,
    };
    if (base.target !== 'gateway') peak.gateway = NaN;
    const ours = gatewayMs + floorMs + (after.simulator - before.simulator) + (after.loadgen - before.loadgen);
    const other = (100 * (after.machine - before.machine - ours)) / toMs(after.at - before.at);
    return summarise(base, outcomes, cpu, other, peak);
  };

  console.log('\nms: p50/p99 = request sent -> last byte; sch = from the scheduled send time (fixed rate, no coordinated omission);');
  console.log(
    'ttfb = sent -> first body byte; cpu = ms of CPU per request (px the proxy: gateway or floor, st the gateway store process, sim simulator, gen load generator); gw rss MiB peak;',
  );
  console.log('other = CPU used by other processes on the machine during the phase, % of one core (more than a few %: a noisy row)\n');
  console.log(row(COLUMNS.map(([name]) => name)));

  const results: PhaseResult[] = [];
  const addedRows: Added[] = [];
  const skipped: Array<{ protocol: Protocol; mode: Mode; target: TargetName; reason: string }> = [];
  for (const protocol of opts.protocols) {
    for (const mode of opts.modes) {
      const sc = scenario(protocol, mode, gw.key);
      const live: Target<TargetName>[] = [];
      for (const name of opts.targets) {
        const reason = await probe(targets[name], sc);
        if (reason === null) live.push(targets[name]);
        else {
          skipped.push({ protocol, mode, target: name, reason });
          console.log(`${row([protocol, mode, '', name])} skipped: POST ${sc.path} answered ${reason}`);
        }
      }
      const byTarget: Partial<Record<TargetName, Partial<Record<PhaseKind, PhaseResult>>>> = {};
      const base = { protocol, mode, seconds: opts.seconds };
      for (const target of live) {
        if (opts.warmupSeconds > 0) await openLoop(target, sc, opts.rate, opts.warmupSeconds);
        const r = await measure({ ...base, target: target.name, phase: 'fixed', offeredRate: opts.rate, concurrency: null }, () =>
          openLoop(target, sc, opts.rate, opts.seconds),
        );
        (byTarget[target.name] ??= {}).fixed = r;
        results.push(r);
        printRow(r);
      }
      for (const target of live) {
        const r = await measure({ ...base, target: target.name, phase: 'saturation', offeredRate: null, concurrency: opts.concurrency }, () =>
          closedLoop(target, sc, opts.concurrency, opts.seconds),
        );
        (byTarget[target.name] ??= {}).saturation = r;
        results.push(r);
        printRow(r);
      }
      for (const phase of ['fixed', 'saturation'] as const) {
        const d = byTarget.direct?.[phase];
        for (const proxy of ['floor', 'gateway'] as const) {
          const p = byTarget[proxy]?.[phase];
          if (!d || !p) continue;
          const a = added(d, p);
          addedRows.push(a);
          printAdded(a);
        }
      }
    }
  }

  const gatewayPeakRss = treeRssMiB(gatewayTree(), 'VmHWM');
  console.log(
    `\ngateway RSS (API and store processes) ${gatewayRssAtStart.toFixed(0)} MiB right after start-up, peak (sum of each one's VmHWM) ${gatewayPeakRss.toFixed(0)} MiB; simulator peak ${statusMiB(pids.simulator, 'VmHWM').toFixed(0)} MiB`,
  );
  const lags = results.flatMap((r) => (r.sendLag ? [r.sendLag] : []));
  if (lags.length > 0) {
    console.log(
      `load generator sent late by p50 ${f2(Math.max(...lags.map((l) => l.p50)))} ms, p99 ${f2(Math.max(...lags.map((l) => l.p99)))} ms ` +
        `(worst fixed-rate phase; 1 ms timers: this is the gap between "sch" and sent-based figures)`,
    );
  }
  const fixedAdded = addedRows.filter((a) => a.phase === 'fixed' && a.target === 'gateway');
  if (fixedAdded.length > 0) {
    const worst = Math.max(...fixedAdded.map((a) => a.p50));
    console.log(`target: added median latency < 1 ms at ${opts.rate} req/s: ${worst < 1 ? 'met' : 'NOT met'} (worst added p50 ${signed(worst)} ms)`);
  }
  console.log(`logs: ${path.relative(root, logs.gateway)}, ${path.relative(root, logs.simulator)}`);

  const file = writeBenchResults(
    'text',
    {
      options: opts,
      startedAt: startedAt.toISOString(),
      cores: os.cpus().length,
      loadAverageAtStart: loadAtStart,
      node: process.version,
      clockTicks: CLOCK_TICKS,
      results,
      added: addedRows,
      skipped,
      rssMiB: { gatewayAtStart: gatewayRssAtStart, gatewayPeak: gatewayPeakRss, simulatorPeak: statusMiB(pids.simulator, 'VmHWM') },
    },
    startedAt,
  );
  console.log(`results written to ${file}`);
  for (const t of Object.values(targets)) t.agent.destroy();
}

bench.run(main);
