/**
 * npm run bench:peers -- [--rate 1000] [--seconds 10] [--warmup-seconds 2] [--concurrency 64]
 *                         [--peers litellm,portkey] [--protocols anthropic,openai] [--modes plain,stream]
 *                         [--billing on|off] [--log-level info]
 *
 * This gateway's text path against two peer gateways, in one run, in front of the same fake
 * upstream (the provider simulator), with the same load generator and request bodies as
 * bench:text (bench/text-load.ts):
 *   gateway  this checkout's API process (dist/src/api/server.js), as bench:text starts it;
 *   portkey  @portkey-ai/gateway's node server, told where the simulator is per request
 *            (x-portkey-provider, x-portkey-custom-host);
 *   litellm  the LiteLLM proxy with 2 workers, a generated config routing cm-sonnet-4.5 to the
 *            simulator's /v1/messages (anthropic provider) and gpt-4o-mini to its /v1 (openai);
 *            no master key, database, callbacks or telemetry;
 * plus `direct` (the simulator itself), the baseline of the added latency.
 *
 * The peers are installed under .tools/peers/ on first use (bench/peers-install.ts); one that
 * cannot be installed or started is reported and left out. Per protocol x mode and target, as
 * in bench:text: warm-up, an open-loop fixed rate (added p50/p99 against direct), a closed-loop
 * saturation (req/s); CPU ms per request and RSS of the target's whole process tree (LiteLLM's
 * workers are child processes), from /proc. Then the gateway's ratios to each peer. Results also
 * go to bench-results/peers-<time>.json. See docs/benchmarks.md#benchpeers.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { projectRoot } from '../src/config/paths';
import { freePort, waitFor } from '../test/support/ports';
import { runNode, type Child } from '../test/support/processes';
import { logLevelOption, optionOf, numberOption } from './ab-options';
import { billingModeOf, type BillingMode } from './billing';
import { BenchChildren } from './child-guard';
import { writeBenchResults } from './results';
import { startTextGateway } from './text-gateway';
import { describeInstall, installPeers, PEERS, type InstallResult, type Installed, type PeerName } from './peers-install';
import { CLOCK_TICKS, commOf, cpuMs, machineBusyMs, selfCpuMs, statusMiB, treeCpu, treeCpuDelta, treePids, treeRssMiB } from './proc-stats';
import {
  closedLoop,
  fire,
  listOf,
  MODES,
  now,
  openLoop,
  outcomeStats,
  type OutcomeStats,
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

type TargetName = 'direct' | 'gateway' | PeerName;

interface Options {
  rate: number;
  seconds: number;
  warmupSeconds: number;
  concurrency: number;
  peers: PeerName[];
  protocols: Protocol[];
  modes: Mode[];
  billing: BillingMode;
  logLevel: string;
}

function parseArgs(argv: string[]): Options {
  const get = optionOf(argv);
  const logLevel = logLevelOption(get);
  const rate = numberOption(get, 'rate', '1000', Number.MIN_VALUE);
  const seconds = numberOption(get, 'seconds', '10', Number.MIN_VALUE);
  return {
    rate,
    seconds,
    warmupSeconds: numberOption(get, 'warmup-seconds', '2', 0),
    concurrency: numberOption(get, 'concurrency', '64', 1, true),
    peers: listOf('peers', get('peers', PEERS.join(',')), PEERS),
    protocols: listOf('protocols', get('protocols', PROTOCOLS.join(',')), PROTOCOLS),
    modes: listOf('modes', get('modes', MODES.join(',')), MODES),
    billing: billingModeOf(get('billing', 'on')),
    logLevel,
  };
}

// ---------------------------------------------------------------------------------------------
// Process trees, from /proc
// ---------------------------------------------------------------------------------------------

/**
 * A child that is not a node entry point of this checkout (runNode's case): LiteLLM's CLI, or
 * Portkey's server, whose --port follows the script. With `group`, it leads a process group
 * of its own and is stopped as a group, so no worker outlives the bench.
 */
function spawnChild(command: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv; log: string; group: boolean }): Child {
  const fd = fs.openSync(opts.log, 'a');
  const proc = spawn(command, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', fd, fd], detached: opts.group });
  fs.closeSync(fd);
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))));
  const signal = (sig: NodeJS.Signals) => {
    try {
      if (opts.group && proc.pid) process.kill(-proc.pid, sig);
      else proc.kill(sig);
    } catch {
      // already gone
    }
  };
  if (opts.group) process.once('exit', () => signal('SIGKILL')); // a throw in a callback: the workers too
  const stop = async (graceMs = 10_000) => {
    if (proc.exitCode === null && proc.signalCode === null) {
      signal('SIGTERM');
      const timer = setTimeout(() => signal('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    }
    if (opts.group) signal('SIGKILL'); // a worker that outlived its supervisor
    return exited;
  };
  const kill = async () => {
    signal('SIGKILL');
    return exited;
  };
  return { proc, exited, stop, kill };
}

// ---------------------------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------------------------

interface PhaseResult extends PhaseOf<TargetName>, OutcomeStats {
  /** CPU ms per request: the target's process tree (NaN for direct), the simulator, the load generator. */
  cpuMsPerRequest: { target: number; simulator: number; loadgen: number };
  /** CPU used by every other process on the machine during the phase (idle peers included), in % of one core. */
  otherCpuPercent: number;
  /** Highest sum of RSS over the target's process tree sampled during the phase, MiB. */
  peakRssMiB: number;
  /** Processes in the target's tree. */
  processes: number;
}

function summarise(
  base: PhaseOf<TargetName>,
  outcomes: Outcome[],
  extra: Pick<PhaseResult, 'cpuMsPerRequest' | 'otherCpuPercent' | 'peakRssMiB' | 'processes'>,
): PhaseResult {
  return { ...base, ...outcomeStats(outcomes, base.phase === 'fixed').stats, ...extra };
}

// ---------------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------------

const num = (v: number, digits = 2) => (Number.isFinite(v) ? v.toFixed(digits) : 'n/a');
/** Milliseconds to 2 decimals, fewer once they are large (an overloaded peer's seconds), so the columns hold. */
const ms = (v: number) => num(v, Math.abs(v) >= 1000 ? 0 : Math.abs(v) >= 100 ? 1 : 2);
const signed = (v: number) => (Number.isFinite(v) ? `${v >= 0 ? '+' : ''}${ms(v)}` : 'n/a');
const ratio = (v: number) => (Number.isFinite(v) ? `x${v.toFixed(2)}` : 'n/a');

function table(columns: Array<[string, number]>) {
  return (cells: string[]) =>
    cells
      .map((c, i) => {
        const w = columns[i]?.[1] ?? 0;
        return w < 0 ? c.padEnd(-w) : c.padStart(w);
      })
      .join(' ')
      .trimEnd();
}

const MAIN_COLUMNS: Array<[string, number]> = [
  ['protocol', -10],
  ['mode', -7],
  ['target', -8],
  ['req/s', 7],
  ['p50', 8],
  ['p99', 8],
  ['+p50', 8],
  ['+p99', 8],
  ['ttfb', 7],
  ['err', 5],
  ['cpu', 6],
  ['req/s', 7],
  ['p50', 8],
  ['p99', 8],
  ['err', 5],
  ['cpu', 6],
  ['rss', 6],
  ['other', 6],
];
const mainRow = table(MAIN_COLUMNS);

const RATIO_COLUMNS: Array<[string, number]> = [
  ['protocol', -10],
  ['mode', -7],
  ['peer', -8],
  ['req/s', 8],
  ['cpu/req', 8],
  ['rss', 8],
  ['gw +p50', 8],
  ['peer +p50', 10],
  ['gw +p99', 8],
  ['peer +p99', 10],
];
const ratioRow = table(RATIO_COLUMNS);

interface Block {
  protocol: Protocol;
  mode: Mode;
  fixed: Partial<Record<TargetName, PhaseResult>>;
  saturation: Partial<Record<TargetName, PhaseResult>>;
}

/** Added latency of a target's fixed-rate phase over direct's, sent -> last byte. */
function addedOf(block: Block, target: TargetName): { p50: number; p99: number } {
  const d = block.fixed.direct;
  const t = block.fixed[target];
  if (!d || !t) return { p50: NaN, p99: NaN };
  return { p50: t.latency.p50 - d.latency.p50, p99: t.latency.p99 - d.latency.p99 };
}

/** A fixed-rate phase whose target answered well below the offered rate: its latency is mostly queueing. */
const behind = (r: PhaseResult): boolean => r.offeredRate !== null && r.rps < 0.95 * r.offeredRate;

function printBlockRow(block: Block, target: TargetName): void {
  const f = block.fixed[target];
  const s = block.saturation[target];
  const proxy = target !== 'direct';
  const added = addedOf(block, target);
  const errs = (r: PhaseResult | undefined) => (r ? String(r.errors) : '');
  console.log(
    mainRow([
      block.protocol,
      block.mode,
      target,
      f ? `${num(f.rps, 0)}${behind(f) ? '*' : ''}` : '',
      f ? ms(f.latency.p50) : '',
      f ? ms(f.latency.p99) : '',
      proxy ? signed(added.p50) : '',
      proxy ? signed(added.p99) : '',
      f && block.mode === 'stream' ? ms(f.firstByte.p50) : '',
      errs(f),
      f && proxy ? num(f.cpuMsPerRequest.target) : '',
      s ? num(s.rps, 0) : '',
      s ? ms(s.latency.p50) : '',
      s ? ms(s.latency.p99) : '',
      errs(s),
      s && proxy ? num(s.cpuMsPerRequest.target) : '',
      proxy ? num(Math.max(f?.peakRssMiB ?? NaN, s?.peakRssMiB ?? NaN), 0) : '',
      `${num(Math.max(0, Math.max(f?.otherCpuPercent ?? 0, s?.otherCpuPercent ?? 0)), 0)}%`,
    ]),
  );
  for (const r of [f, s]) {
    const kinds = Object.entries(r?.errorKinds ?? {});
    if (r && kinds.length > 0) console.log(`${' '.repeat(27)}${r.phase} errors: ${kinds.map(([k, n]) => `${n} x ${k}`).join(', ')}`);
  }
}

interface Comparison {
  protocol: Protocol;
  mode: Mode;
  peer: PeerName;
  /** gateway saturation req/s / peer's. */
  rpsRatio: number;
  /** gateway CPU ms per request at saturation / peer's. */
  cpuRatio: number;
  /** gateway peak tree RSS in this protocol x mode's phases / peer's. */
  rssRatio: number;
  gatewayAdded: { p50: number; p99: number };
  peerAdded: { p50: number; p99: number };
}

function compare(block: Block, peer: PeerName): Comparison | null {
  const gs = block.saturation.gateway;
  const ps = block.saturation[peer];
  if (!gs || !ps) return null;
  const peak = (t: TargetName) => Math.max(block.fixed[t]?.peakRssMiB ?? NaN, block.saturation[t]?.peakRssMiB ?? NaN);
  return {
    protocol: block.protocol,
    mode: block.mode,
    peer,
    rpsRatio: gs.rps / ps.rps,
    cpuRatio: gs.cpuMsPerRequest.target / ps.cpuMsPerRequest.target,
    rssRatio: peak('gateway') / peak(peer),
    gatewayAdded: addedOf(block, 'gateway'),
    peerAdded: addedOf(block, peer),
  };
}

// ---------------------------------------------------------------------------------------------
// The targets
// ---------------------------------------------------------------------------------------------

interface Runner {
  name: TargetName;
  target: Target<TargetName>;
  /** The bench's request for this target: the same body, plus the headers the target needs. */
  scenario(protocol: Protocol, mode: Mode): Scenario;
  /** Root of the target's process tree; null for direct (the simulator is measured on its own). */
  pid: number | null;
  version: string;
  idleRssMiB: number;
  /** RSS of each process of the tree at idle, MiB, root first. */
  idleRssByProcess: Array<{ pid: number; comm: string; rssMiB: number }>;
  startSeconds: number;
}

const bench = new BenchChildren('the simulator, the gateway and the peers');
const agentOptions: http.AgentOptions = { keepAlive: true, maxSockets: 256, maxFreeSockets: 256 };
const target = (name: TargetName, port: number): Target<TargetName> => ({ name, host: '127.0.0.1', port, agent: new http.Agent(agentOptions) });
/** What the peers send upstream as the provider key; the simulator takes any key. */
const PEER_KEY = 'sk-bench-peer';
const START_TIMEOUT_MS = 180_000;

/** A peer's environment: nothing of the bench's (a DATABASE_URL would give LiteLLM a database). */
function peerEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const keep = ['PATH', 'HOME', 'LANG', 'TMPDIR', 'NODE_EXTRA_CA_CERTS'];
  return { ...Object.fromEntries(keep.flatMap((k) => (process.env[k] ? [[k, process.env[k]!]] : []))), ...extra };
}

/** Waits for a child's readiness check, failing early (with its log) when it exits. */
async function ready(what: string, child: Child, log: string, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  await waitFor(
    what,
    async () => {
      if (child.proc.exitCode !== null || child.proc.signalCode !== null)
        throw new Error(`${what} exited (${child.proc.exitCode ?? child.proc.signalCode}); see ${log}`);
      return check();
    },
    START_TIMEOUT_MS,
    250,
  );
  return (Date.now() - started) / 1000;
}

async function startPortkey(inst: Installed, simUrl: string, logDir: string): Promise<Runner> {
  const port = await freePort();
  const log = path.join(logDir, 'peers-portkey.log');
  fs.writeFileSync(log, '');
  // Its node server reads `--port=N` (and listens on every interface); --headless: no UI.
  const child = bench.add(spawnChild(inst.command, [...inst.args, `--port=${port}`], { cwd: inst.cwd, env: peerEnv({}), log, group: false }));
  const startSeconds = await ready('portkey', child, log, async () => (await fetch(`http://127.0.0.1:${port}/`)).status > 0);
  return {
    name: 'portkey',
    target: target('portkey', port),
    scenario: (protocol, mode) => {
      const sc = scenario(protocol, mode, PEER_KEY);
      // The provider and its base URL travel with each request; the body is the bench's own.
      // The bench's protocol names are Portkey's provider names.
      return { ...sc, headers: { ...sc.headers, 'x-portkey-provider': protocol, 'x-portkey-custom-host': `${simUrl}/v1` } };
    },
    pid: child.proc.pid ?? null,
    version: inst.version,
    idleRssMiB: NaN,
    idleRssByProcess: [],
    startSeconds,
  };
}

/** LiteLLM's proxy config: the bench's two model names routed to the simulator, and nothing else. */
function litellmConfig(simUrl: string): string {
  return YAML.stringify({
    model_list: [
      // The anthropic provider serves /v1/messages natively; api_base is the host, LiteLLM appends /v1/messages.
      { model_name: 'cm-sonnet-4.5', litellm_params: { model: 'anthropic/cm-sonnet-4.5', api_base: simUrl, api_key: PEER_KEY } },
      { model_name: 'gpt-4o-mini', litellm_params: { model: 'openai/gpt-4o-mini', api_base: `${simUrl}/v1`, api_key: PEER_KEY } },
    ],
    litellm_settings: {
      telemetry: false,
      set_verbose: false,
      callbacks: [],
      success_callback: [],
      failure_callback: [],
      num_retries: 0,
      request_timeout: 30,
    },
    // No master key and no database_url: no auth lookups, no spend logs; proxy work only.
    general_settings: { disable_spend_logs: true, background_health_checks: false },
  });
}

async function startLitellm(inst: Installed, simUrl: string, dataDir: string, logDir: string): Promise<Runner> {
  const port = await freePort();
  const log = path.join(logDir, 'peers-litellm.log');
  fs.writeFileSync(log, '');
  const config = path.join(dataDir, 'litellm.yaml');
  fs.writeFileSync(config, litellmConfig(simUrl));
  const env = peerEnv({
    // The model cost map ships with the package; the default fetches it from the internet at start.
    LITELLM_LOCAL_MODEL_COST_MAP: 'True',
    // Also uvicorn's log level: no access-log line per request.
    LITELLM_LOG: 'ERROR',
    PYTHONUNBUFFERED: '1',
  });
  const args = ['--config', config, '--host', '127.0.0.1', '--port', String(port), '--num_workers', '2', '--telemetry', 'False'];
  const child = bench.add(spawnChild(inst.command, args, { cwd: dataDir, env, log, group: true }));
  const startSeconds = await ready('litellm', child, log, async () => (await fetch(`http://127.0.0.1:${port}/health/liveliness`)).ok);
  return {
    name: 'litellm',
    target: target('litellm', port),
    scenario: (protocol, mode) => scenario(protocol, mode, PEER_KEY),
    pid: child.proc.pid ?? null,
    version: `${inst.version}, 2 workers`,
    idleRssMiB: NaN,
    idleRssByProcess: [],
    startSeconds,
  };
}

/** The gateway API process as bench:text starts it (bench/text-gateway.ts), with its bench key. */
async function startGateway(opts: Options, simUrl: string, dataDir: string, logDir: string, commit: string): Promise<{ runner: Runner; key: string }> {
  const gw = await startTextGateway({
    bench,
    root: projectRoot(),
    dataDir,
    simUrl,
    logLevel: opts.logLevel,
    log: path.join(logDir, 'peers-gateway.log'),
    billing: opts.billing,
    what: 'gateway',
  });
  return {
    key: gw.key,
    runner: {
      name: 'gateway',
      target: target('gateway', gw.port),
      scenario: (protocol, mode) => scenario(protocol, mode, gw.key),
      pid: gw.child.proc.pid ?? null,
      version: `this checkout ${commit}, billing ${opts.billing}, LOG_LEVEL ${opts.logLevel}`,
      idleRssMiB: NaN,
      idleRssByProcess: [],
      startSeconds: gw.startSeconds,
    },
  };
}

/** One request through the bench's own client; when it fails, what the target answered, for the n/a line. */
async function probe(runner: Runner, sc: Scenario): Promise<string | null> {
  const error = await new Promise<string | null>((resolve) => fire(runner.target, sc, now(), (o) => resolve(o.error)));
  if (error === null) return null;
  try {
    const headers = Object.fromEntries(Object.entries(sc.headers).map(([k, v]) => [k, String(v)]));
    const res = await fetch(`http://${runner.target.host}:${runner.target.port}${sc.path}`, { method: 'POST', headers, body: sc.body });
    const text = (await res.text()).replace(/\s+/g, ' ').slice(0, 160);
    return `${error}; ${res.status}: ${text}`;
  } catch {
    return error;
  }
}

function gitCommit(root: string): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const root = projectRoot();
  const startedAt = new Date();
  const commit = gitCommit(root);
  const logDir = path.join(root, '.bench-data');
  const dataDir = path.join(logDir, `peers-${startedAt.getTime()}`);
  fs.mkdirSync(dataDir, { recursive: true });
  bench.removeAtEnd(dataDir);

  console.log(`\nbench:peers  installing peers under ${path.relative(root, path.join(root, '.tools', 'peers'))}/ (skipped when already there)`);
  const installs = await installPeers(opts.peers, root);
  const installed: Installed[] = [];
  for (const peer of opts.peers) {
    const r: InstallResult | null = installs[peer];
    if (!r) continue;
    console.log(`  ${describeInstall(r)}`);
    if (r.ok) installed.push(r);
  }

  const simLog = path.join(logDir, 'peers-simulator.log');
  fs.writeFileSync(simLog, '');
  const simPort = await freePort();
  const simUrl = `http://127.0.0.1:${simPort}`;
  const sim = bench.add(runNode('dist/simulator/main.js', { HOST: '127.0.0.1', SIMULATOR_PORT: String(simPort), LOG_LEVEL: 'warn' }, simLog));
  await ready('simulator', sim, simLog, async () => (await fetch(`${simUrl}/_sim/health`)).ok);

  // Everything starts at once (LiteLLM takes seconds to import); a peer that does not come up is left out.
  const failures: Array<{ peer: PeerName; reason: string }> = [];
  const [gateway, ...peerStarts] = await Promise.all([
    startGateway(opts, simUrl, dataDir, logDir, commit),
    ...installed.map((inst) =>
      (inst.peer === 'portkey' ? startPortkey(inst, simUrl, logDir) : startLitellm(inst, simUrl, dataDir, logDir)).catch((err: unknown) => {
        failures.push({ peer: inst.peer, reason: err instanceof Error ? err.message : String(err) });
        return null;
      }),
    ),
  ]);
  for (const f of failures) console.log(`  ${f.peer}: did not start, skipped: ${f.reason}`);
  const direct: Runner = {
    name: 'direct',
    target: target('direct', simPort),
    scenario: (protocol, mode) => scenario(protocol, mode, gateway.key),
    pid: null,
    version: 'the provider simulator',
    idleRssMiB: NaN,
    idleRssByProcess: [],
    startSeconds: 0,
  };
  const runners: Runner[] = [direct, gateway.runner, ...peerStarts.filter((r): r is Runner => r !== null)];
  const peers = runners.filter((r) => r.name !== 'direct' && r.name !== 'gateway').map((r) => r.name as PeerName);

  // Idle: started, nothing sent yet, the machine quiet for a second.
  await new Promise((r) => setTimeout(r, 1000));
  for (const r of runners) {
    if (r.pid === null) continue;
    const pids = treePids(r.pid);
    r.idleRssMiB = treeRssMiB(pids);
    r.idleRssByProcess = pids.map((pid) => ({ pid, comm: commOf(pid), rssMiB: statusMiB(pid, 'VmRSS') }));
  }

  const loadAtStart = os.loadavg()[0] ?? NaN;
  console.log(
    `\nfixed rate ${opts.rate} req/s (open loop) for ${opts.seconds} s after ${opts.warmupSeconds} s warm-up; saturation ${opts.concurrency} connections (closed loop) for ${opts.seconds} s`,
  );
  console.log(`${os.cpus().length} cores shared by everything; 1-min load average before the run ${loadAtStart.toFixed(2)}`);
  for (const r of runners.slice(1)) {
    const each = r.idleRssByProcess.map((p) => `${p.comm} ${num(p.rssMiB, 0)}`).join(' + ');
    console.log(`  ${r.name.padEnd(8)} ${r.version}; up in ${r.startSeconds.toFixed(1)} s; idle RSS ${num(r.idleRssMiB, 0)} MiB (${each})`);
  }

  /** One measured phase with CPU and RSS accounting of the target's tree around it. */
  const measure = async (runner: Runner, base: PhaseOf<TargetName>, run: () => Promise<Outcome[]>): Promise<PhaseResult> => {
    const pids = runner.pid === null ? [] : treePids(runner.pid);
    let peak = 0;
    const sample = () => {
      peak = Math.max(peak, treeRssMiB(pids));
    };
    const sampler = setInterval(sample, 250);
    const before = { tree: treeCpu(pids), sim: cpuMs(sim.proc.pid), gen: selfCpuMs(), machine: machineBusyMs(), at: now() };
    const outcomes = await run();
    const afterPids = runner.pid === null ? [] : treePids(runner.pid);
    const after = { tree: treeCpu(afterPids), sim: cpuMs(sim.proc.pid), gen: selfCpuMs(), machine: machineBusyMs(), at: now() };
    clearInterval(sampler);
    sample();
    const n = Math.max(1, outcomes.length);
    const tree = runner.pid === null ? 0 : treeCpuDelta(before.tree, after.tree);
    const ours = tree + (after.sim - before.sim) + (after.gen - before.gen);
    return summarise(base, outcomes, {
      cpuMsPerRequest: { target: runner.pid === null ? NaN : tree / n, simulator: (after.sim - before.sim) / n, loadgen: (after.gen - before.gen) / n },
      otherCpuPercent: (100 * (after.machine - before.machine - ours)) / toMs(after.at - before.at),
      peakRssMiB: runner.pid === null ? NaN : peak,
      processes: afterPids.length,
    });
  };

  console.log('\nfixed = open loop at the fixed rate: req/s achieved, p50/p99 ms sent -> last byte, +p50/+p99 = minus direct (added latency),');
  console.log('ttfb = p50 ms to the first byte (streams); sat = closed loop: req/s is the throughput; cpu = CPU ms per request of the');
  console.log("target's whole process tree; rss = its peak RSS (MiB, sum over the tree); other = CPU of other processes, % of one core\n");
  const group = (label: string, from: number, to: number) => {
    const width = MAIN_COLUMNS.slice(from, to + 1).reduce((w, [, c]) => w + Math.abs(c) + 1, -1);
    return `${label} `.padEnd(width, '-');
  };
  console.log(`${' '.repeat(27)} ${group(`fixed ${opts.rate}/s`, 3, 10)} ${group(`sat c=${opts.concurrency}`, 11, 15)} ${group('tree', 16, 17)}`);
  console.log(mainRow(MAIN_COLUMNS.map(([name]) => name)));

  const results: PhaseResult[] = [];
  const blocks: Block[] = [];
  const skipped: Array<{ protocol: Protocol; mode: Mode; target: TargetName; reason: string }> = [];
  for (const protocol of opts.protocols) {
    for (const mode of opts.modes) {
      const block: Block = { protocol, mode, fixed: {}, saturation: {} };
      blocks.push(block);
      const live: Array<{ runner: Runner; sc: Scenario }> = [];
      for (const runner of runners) {
        const sc = runner.scenario(protocol, mode);
        const reason = await probe(runner, sc);
        if (reason === null) live.push({ runner, sc });
        else skipped.push({ protocol, mode, target: runner.name, reason });
      }
      const base = { protocol, mode, seconds: opts.seconds };
      for (const { runner, sc } of live) {
        if (opts.warmupSeconds > 0) await openLoop(runner.target, sc, opts.rate, opts.warmupSeconds);
        const r = await measure(runner, { ...base, target: runner.name, phase: 'fixed', offeredRate: opts.rate, concurrency: null }, () =>
          openLoop(runner.target, sc, opts.rate, opts.seconds),
        );
        block.fixed[runner.name] = r;
        results.push(r);
      }
      for (const { runner, sc } of live) {
        const r = await measure(runner, { ...base, target: runner.name, phase: 'saturation', offeredRate: null, concurrency: opts.concurrency }, () =>
          closedLoop(runner.target, sc, opts.concurrency, opts.seconds),
        );
        block.saturation[runner.name] = r;
        results.push(r);
      }
      for (const runner of runners) {
        const miss = skipped.find((s) => s.protocol === protocol && s.mode === mode && s.target === runner.name);
        if (miss) console.log(`${mainRow([protocol, mode, runner.name])} n/a (POST ${runner.scenario(protocol, mode).path}: ${miss.reason})`);
        else printBlockRow(block, runner.name);
      }
    }
  }

  const comparisons: Comparison[] = [];
  if (peers.length > 0) {
    console.log('\nthe gateway against each peer, gateway / peer: req/s and CPU ms per request at saturation (req/s above 1 and');
    console.log('cpu/req below 1 favour the gateway), peak tree RSS in these phases (below 1: the gateway holds less); added latency, ms\n');
    console.log(ratioRow(RATIO_COLUMNS.map(([name]) => name)));
    for (const block of blocks) {
      for (const peer of peers) {
        const c = compare(block, peer);
        if (!c) {
          console.log(`${ratioRow([block.protocol, block.mode, peer])} n/a (${block.saturation.gateway ? peer : 'gateway'} has no result)`);
          continue;
        }
        comparisons.push(c);
        console.log(
          ratioRow([
            c.protocol,
            c.mode,
            c.peer,
            ratio(c.rpsRatio),
            ratio(c.cpuRatio),
            ratio(c.rssRatio),
            signed(c.gatewayAdded.p50),
            signed(c.peerAdded.p50),
            signed(c.gatewayAdded.p99),
            signed(c.peerAdded.p99),
          ]),
        );
      }
    }
  }

  const peakOf = (name: TargetName) => Math.max(...results.filter((r) => r.target === name).map((r) => r.peakRssMiB));
  const memory = runners.slice(1).map((r) => ({ target: r.name, processes: r.idleRssByProcess.length, idleMiB: r.idleRssMiB, peakMiB: peakOf(r.name) }));
  console.log('\nRSS of each process tree, MiB: idle after start-up -> peak under load; the gateway / peer');
  const gw = memory.find((m) => m.target === 'gateway');
  for (const m of memory) {
    const vs = gw && m.target !== 'gateway' ? `; gateway / ${m.target}: idle ${ratio(gw.idleMiB / m.idleMiB)}, peak ${ratio(gw.peakMiB / m.peakMiB)}` : '';
    console.log(`  ${m.target.padEnd(8)} ${m.processes} process(es): ${num(m.idleMiB, 0)} -> ${num(m.peakMiB, 0)}${vs}`);
  }
  if (results.some(behind)) console.log(`* fell behind the offered ${opts.rate} req/s at the fixed rate: its latency there is mostly queueing in front of it`);
  const busy = results.filter((r) => r.otherCpuPercent > 15);
  if (busy.length > 0) console.log(`${busy.length} of ${results.length} phases ran while other processes used more than 15 % of a core: noisy figures`);
  console.log(`logs: .bench-data/peers-{gateway,portkey,litellm,simulator}.log`);

  const file = writeBenchResults(
    'peers',
    {
      options: opts,
      startedAt: startedAt.toISOString(),
      commit,
      cores: os.cpus().length,
      loadAverageAtStart: loadAtStart,
      node: process.version,
      clockTicks: CLOCK_TICKS,
      installs: Object.values(installs).filter((r) => r !== null),
      startFailures: failures,
      targets: runners.map((r) => ({
        name: r.name,
        version: r.version,
        startSeconds: r.startSeconds,
        idleRssMiB: r.idleRssMiB,
        idleRssByProcess: r.idleRssByProcess,
      })),
      results,
      comparisons,
      memory,
      skipped,
    },
    startedAt,
  );
  console.log(`results written to ${file}`);
  for (const r of runners) r.target.agent.destroy();
}

bench.run(main);
