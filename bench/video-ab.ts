/**
 * npm run bench:video-ab -- --against DIR [--billing on|off] [--against-billing on|off]
 *                           [--pairs 3] [--rounds 4] [--streams 50] [--creates 100]
 *                           [--concurrency 50] [--job-ms 3000] [--poll-ms 1000] [--cpu-prof DIR]
 *                           [--query-seconds 3] [--mode turns|together]
 *
 * The video paths of this checkout's gateway against another checkout's (DIR, built), both
 * stacks (API and worker processes, each with a PostgreSQL database of its own) running at once
 * on one Temporal dev server (a task queue each) and one provider simulator, loaded in turn:
 * the bursts of bench:video, where a change shows first, measured on one stack while the other
 * is idle. Per pair of fresh stacks, `--rounds` rounds; per round and stack, strictly
 * alternating (the side that goes first alternates between pairs):
 *   - `--streams` streamed video chat completions sent at once: time to the first chunk;
 *   - `--creates` /v1/video/create calls by `--concurrency` clients: creates/s, p50 and p99;
 *   - `--query-seconds` of status reads of those tasks by as many clients, while they run;
 *   - then a wait until every task of the round has completed, so the next phase starts on a
 *     quiet machine; then each task's completion lag (upstream job done -> workflow closed)
 *     and the peak RSS of the API and the worker.
 * Prints every round and, per figure, the means and the change of each pair of stacks. Results
 * also go to bench-results/video-ab-<time>.json, with the CPU per create of each process.
 * `--mode together` runs each step on both stacks at the same time instead: the machine's
 * moods then hit both sides alike, and the change is what one build adds to a request's time
 * under the very same load. `--cpu-prof DIR` writes a CPU profile of each API process into
 * DIR/<side>-<pair>/, to compare where two builds spend the same load's CPU.
 * See docs/benchmarks.md (bench:video-ab).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { projectRoot, temporalCliPath } from '../src/config/paths';
import { createLogger } from '../src/log';
import { startDevServer } from '../src/temporal/dev-server';
import { freePort, waitFor } from '../test/support/ports';
import { runNode, type Child } from '../test/support/processes';
import { againstCheckout, numberOption, optionOf } from './ab-options';
import { BenchChildren } from './child-guard';
import { writeBenchResults } from './results';
import { mean, pairChanges, pct } from './ab-stats';
import { benchDatabase, benchKeyBody, billingModeOf, type BillingMode } from './billing';
import { cpuSnapshot } from './cpu';
import { cpuMs, machineBusyMs, statusMiB } from './proc-stats';
import { runScript } from './script-command';
import { chatStreamBurst, completionLags, createWave, percentile, statusReads } from './video-load';

interface Options {
  against: string;
  billing: BillingMode;
  againstBilling: BillingMode;
  pairs: number;
  rounds: number;
  streams: number;
  creates: number;
  concurrency: number;
  jobMs: number;
  pollMs: number;
  /** Where the API processes write CPU profiles; none when empty. */
  cpuProfDir: string;
  /** Seconds of status reads after the creates, while their tasks run. */
  querySeconds: number;
  /** turns: one stack loaded at a time; together: both at once (see measureRound). */
  mode: 'turns' | 'together';
}

function parseArgs(argv: string[]): Options {
  const get = optionOf(argv);
  const count = (name: string, fallback: string, min: number) => numberOption(get, name, fallback, min, true);
  return {
    against: againstCheckout(get('against', ''), ['dist/src/api/server.js', 'dist/src/worker.js']),
    billing: billingModeOf(get('billing', 'on')),
    againstBilling: billingModeOf(get('against-billing', 'off')),
    pairs: count('pairs', '3', 1),
    rounds: count('rounds', '4', 1),
    streams: count('streams', '50', 1),
    creates: count('creates', '100', 1),
    concurrency: count('concurrency', '50', 1),
    jobMs: count('job-ms', '3000', 100),
    pollMs: count('poll-ms', '1000', 100),
    cpuProfDir: get('cpu-prof', '') && path.resolve(get('cpu-prof', '')),
    mode: modeOf(get('mode', 'turns')),
    querySeconds: count('query-seconds', '3', 1),
  };
}

function modeOf(value: string): Options['mode'] {
  if (value !== 'turns' && value !== 'together') throw new Error('--mode: expected turns or together');
  return value;
}

type Side = 'this' | 'against';

interface Stack {
  side: Side;
  api: string;
  auth: Record<string, string>;
  apiProc: Child;
  workerProc: Child;
  dropDatabase: () => Promise<void>;
}

interface Phase {
  side: Side;
  pair: number;
  round: number;
  firstChunkP50: number;
  firstChunkP99: number;
  streamErrors: number;
  createsPerSecond: number;
  createP50: number;
  createP99: number;
  /** GET /v1/video/query while the wave's tasks run */
  readP50: number;
  readP99: number;
  readErrors: number;
  /** upstream job completed -> workflow closed, over the wave's tasks */
  lagP50: number;
  lagP99: number;
  notCompleted: number;
  /** VmHWM of the API and worker processes after the round (peak since they started) */
  apiPeakMiB: number;
  workerPeakMiB: number;
  createErrors: number;
  /** CPU ms of the API process per request (streams and creates). */
  apiCpuMsPerRequest: number;
  /**
   * CPU ms per create, from the wave's start until its tasks completed, of each process and of
   * the whole machine: where a build's extra work per task lands when the machine is the limit.
   */
  createCpu: Record<CpuPart, number>;
}

const CPU_PARTS = ['api', 'worker', 'temporal', 'postgres', 'machine'] as const;
type CpuPart = (typeof CPU_PARTS)[number];

const ms = (v: number) => `${v.toFixed(0)} ms`;
const failures = (p: Phase) => p.streamErrors + p.createErrors + p.readErrors + p.notCompleted;

async function startStack(
  side: Side,
  pair: number,
  root: string,
  billing: BillingMode,
  shared: { temporalAddress: string; simUrl: string; runDir: string; pollMs: number; cpuProfDir: string },
): Promise<Stack> {
  const port = await freePort();
  const api = `http://127.0.0.1:${port}`;
  const database = await benchDatabase(`ab_${side}`);
  const dataDir = path.join(shared.runDir, `${side}-${pair}`);
  fs.mkdirSync(dataDir, { recursive: true });
  const env = {
    DATABASE_URL: database.url,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    ADMIN_TOKEN: 'bench-admin',
    LOG_LEVEL: 'warn',
    TEMPORAL_ADDRESS: shared.temporalAddress,
    TEMPORAL_TASK_QUEUE: `bench-ab-${side}-${pair}`,
    SIMULATOR_URL: shared.simUrl,
    UPSTREAM_POLL_MS: String(shared.pollMs),
  };
  const profile = shared.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${path.join(shared.cpuProfDir, `${side}-${pair}`)}`] : [];
  bench.atEnd(database.drop);
  const apiProc = bench.add(runScript('api', env, `bench-ab-${side}-api`, root, profile));
  const workerProc = bench.add(runScript('worker', env, `bench-ab-${side}-worker`, root));
  const stack = { side, api, auth: {}, apiProc, workerProc, dropDatabase: database.drop };
  await waitFor(
    `${side} gateway healthy`,
    async () => {
      if (apiProc.proc.exitCode !== null || workerProc.proc.exitCode !== null)
        throw new Error(`the ${side} gateway exited (see .test-data/bench-ab-${side}-*.log)`);
      return (await fetch(`${api}/healthz`)).status === 200;
    },
    90_000,
    250,
  );
  const issued = (await (
    await fetch(`${api}/admin/keys`, {
      method: 'POST',
      headers: { authorization: 'Bearer bench-admin', 'content-type': 'application/json' },
      body: JSON.stringify(benchKeyBody(billing)),
    })
  ).json()) as { key: string };
  return { ...stack, auth: { authorization: `Bearer ${issued.key}` } };
}

async function stopStack(stack: Stack): Promise<void> {
  await Promise.all([stack.apiProc.stop(), stack.workerProc.stop()]);
  await stack.dropDatabase();
}

/** Waits until none of the key's workflows (the owner of `taskId`) is running. */
async function waitIdle(temporal: Client, taskId: string | undefined): Promise<void> {
  if (!taskId) return;
  const owner = ((await temporal.workflow.getHandle(taskId).describe()).searchAttributes.GatewayOwner as string[])[0];
  await waitFor(
    "the round's tasks to complete",
    async () => (await temporal.workflow.count(`GatewayOwner = "${owner}" AND ExecutionStatus = "Running"`)).count === 0,
    300_000,
    500,
  );
}

function cpuNow(stack: Stack, temporalPid: number | undefined): Record<CpuPart, number> {
  const groups = cpuSnapshot({ api: stack.apiProc.proc.pid, worker: stack.workerProc.proc.pid, temporal: temporalPid }, { postgres: 'postgres' });
  return { api: groups.api ?? NaN, worker: groups.worker ?? NaN, temporal: groups.temporal ?? NaN, postgres: groups.postgres ?? NaN, machine: machineBusyMs() };
}

/**
 * One round of the given stacks: the stream bursts, then the create waves, then the wait until
 * every task completed. In turns, each stack runs all of that alone, one after the other;
 * together, the stacks run each step at the same time, so both meet the same machine.
 */
async function measureRound(
  stacks: Stack[],
  temporal: Client,
  temporalPid: number | undefined,
  simUrl: string,
  opts: Options,
  at: Pick<Phase, 'pair' | 'round'>,
): Promise<Phase[]> {
  if (opts.mode === 'turns' && stacks.length > 1) {
    const phases: Phase[] = [];
    for (const stack of stacks) phases.push(...(await measureRound([stack], temporal, temporalPid, simUrl, opts, at)));
    return phases;
  }
  const apiBefore = stacks.map((s) => cpuMs(s.apiProc.proc.pid));
  const bursts = await Promise.all(stacks.map((s) => chatStreamBurst(s.api, s.auth, { streams: opts.streams, jobMs: opts.jobMs })));
  const waveBefore = stacks.map((s) => cpuNow(s, temporalPid));
  const waves = await Promise.all(
    stacks.map((s) =>
      createWave(s.api, s.auth, { n: opts.creates, concurrency: opts.concurrency, jobMs: opts.jobMs, rate: 0, label: `${s.side}-${at.pair}-${at.round}` }),
    ),
  );
  const apiAfter = stacks.map((s) => cpuMs(s.apiProc.proc.pid));
  const reads = await Promise.all(
    stacks.map((s, i) => statusReads(s.api, s.auth, waves[i]!.ids, { seconds: opts.querySeconds, concurrency: opts.concurrency })),
  );
  await Promise.all(stacks.map((_, i) => waitIdle(temporal, waves[i]!.ids[0] ?? bursts[i]!.outcomes[0]?.taskId)));
  const waveAfter = stacks.map((s) => cpuNow(s, temporalPid));
  // After the CPU window: these reads of Temporal and the simulator are the bench's, not the load's.
  const lags = await Promise.all(waves.map((w) => completionLags(temporal, simUrl, w.ids)));
  return stacks.map((stack, i): Phase => {
    const burst = bursts[i]!;
    const wave = waves[i]!;
    // Processes the stacks share (the dev server, PostgreSQL, the machine) cannot be told
    // apart when the stacks run together: NaN there.
    const own = (part: CpuPart) => stacks.length === 1 || part === 'api' || part === 'worker';
    const createCpu = Object.fromEntries(
      CPU_PARTS.map((part) => [part, own(part) ? (waveAfter[i]![part] - waveBefore[i]![part]) / opts.creates : NaN]),
    ) as Record<CpuPart, number>;
    return {
      side: stack.side,
      ...at,
      firstChunkP50: percentile(burst.firstChunkMs, 50),
      firstChunkP99: percentile(burst.firstChunkMs, 99),
      streamErrors: burst.errors,
      createsPerSecond: opts.creates / wave.seconds,
      createP50: percentile(wave.latencies, 50),
      createP99: percentile(wave.latencies, 99),
      createErrors: wave.errors,
      readP50: percentile(reads[i]!.latencies, 50),
      readP99: percentile(reads[i]!.latencies, 99),
      readErrors: reads[i]!.errors,
      lagP50: percentile(
        lags[i]!.done.map((t) => t.lag),
        50,
      ),
      lagP99: percentile(
        lags[i]!.done.map((t) => t.lag),
        99,
      ),
      notCompleted: lags[i]!.notCompleted,
      apiPeakMiB: statusMiB(stack.apiProc.proc.pid, 'VmHWM'),
      workerPeakMiB: statusMiB(stack.workerProc.proc.pid, 'VmHWM'),
      apiCpuMsPerRequest: (apiAfter[i]! - apiBefore[i]!) / (opts.streams + opts.creates),
      createCpu,
    };
  });
}

const bench = new BenchChildren('the stacks, the simulator and the dev server');

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const root = projectRoot();
  const runDir = path.join(root, '.bench-data', `video-ab-${Date.now()}`);
  fs.mkdirSync(runDir, { recursive: true });
  bench.removeAtEnd(runDir);
  const temporalServer = await startDevServer({
    cliPath: temporalCliPath(),
    dataDir: runDir,
    port: await freePort(),
    uiPort: await freePort(),
    namespace: 'default',
    logger: createLogger('warn', 'bench'),
    headless: true,
  });
  bench.atEnd(() => temporalServer.stop());
  const simPort = await freePort();
  const simUrl = `http://127.0.0.1:${simPort}`;
  bench.add(runNode('dist/simulator/main.js', { HOST: '127.0.0.1', SIMULATOR_PORT: String(simPort), LOG_LEVEL: 'warn' }, 'bench-ab-simulator', root));
  await waitFor('simulator', async () => (await fetch(`${simUrl}/_sim/health`)).ok, 20_000);
  const temporal = new Client({ connection: await Connection.connect({ address: temporalServer.address }) });
  const shared = { temporalAddress: temporalServer.address, simUrl, runDir, pollMs: opts.pollMs, cpuProfDir: opts.cpuProfDir };

  console.log(`\nbench:video-ab  this checkout (${root}, billing ${opts.billing}) against ${opts.against} (billing ${opts.againstBilling})`);
  console.log(
    `${opts.pairs} pairs of stacks x ${opts.rounds} rounds; ${opts.mode === 'together' ? 'both stacks at once' : 'one stack at a time'}; per round and stack: ${opts.streams} chat streams at once, then ${opts.creates} creates by ${opts.concurrency} clients (job ${opts.jobMs} ms), then idle`,
  );
  const phases: Phase[] = [];
  for (let pair = 1; pair <= opts.pairs; pair += 1) {
    const order: Side[] = pair % 2 === 1 ? ['this', 'against'] : ['against', 'this'];
    const byside = {} as Record<Side, Stack>;
    for (const side of order) {
      byside[side] = await startStack(side, pair, side === 'this' ? root : opts.against, side === 'this' ? opts.billing : opts.againstBilling, shared);
    }
    console.log(`\nstack pair ${pair}`);
    // Warm-up, discarded, in reverse order so the first measured phase follows the other stack's.
    await measureRound(
      [...order].reverse().map((side) => byside[side]),
      temporal,
      temporalServer.pid,
      simUrl,
      opts,
      { pair, round: 0 },
    );
    for (let round = 1; round <= opts.rounds; round += 1) {
      const got = await measureRound(
        order.map((side) => byside[side]),
        temporal,
        temporalServer.pid,
        simUrl,
        opts,
        { pair, round },
      );
      phases.push(...got);
      const a = got.find((p) => p.side === 'this')!;
      const b = got.find((p) => p.side === 'against')!;
      console.log(
        `  round ${round}: first chunk p50 this ${ms(a.firstChunkP50)} against ${ms(b.firstChunkP50)} (${pct(a.firstChunkP50 / b.firstChunkP50 - 1)})` +
          ` | creates/s ${a.createsPerSecond.toFixed(1)} / ${b.createsPerSecond.toFixed(1)} (${pct(a.createsPerSecond / b.createsPerSecond - 1)})` +
          ` | create p50 ${ms(a.createP50)} / ${ms(b.createP50)} | api cpu ms/req ${a.apiCpuMsPerRequest.toFixed(2)} / ${b.apiCpuMsPerRequest.toFixed(2)}` +
          ` | read p50 ${ms(a.readP50)} / ${ms(b.readP50)} | lag p50 ${ms(a.lagP50)} / ${ms(b.lagP50)}` +
          `${failures(a) + failures(b) > 0 ? ` | errors ${failures(a)} / ${failures(b)}` : ''}`,
      );
    }
    for (const side of order) await stopStack(byside[side]);
  }

  console.log(`\nsummary (this against ${opts.against}): means over all rounds, this against; per pair = change of the pair's means, median (min .. max)`);
  type Figure = [string, (p: Phase) => number, (v: number) => string];
  const figures = (
    [
      ['chat first chunk p50', (p) => p.firstChunkP50, ms],
      ['chat first chunk p99', (p) => p.firstChunkP99, ms],
      ['creates/s', (p) => p.createsPerSecond, (v) => v.toFixed(1)],
      ['create p50', (p) => p.createP50, ms],
      ['create p99', (p) => p.createP99, ms],
      ['status read p50', (p) => p.readP50, ms],
      ['status read p99', (p) => p.readP99, ms],
      ['completion lag p50', (p) => p.lagP50, ms],
      ['completion lag p99', (p) => p.lagP99, ms],
      ['peak api rss MiB', (p) => p.apiPeakMiB, (v) => v.toFixed(1)],
      ['peak worker rss MiB', (p) => p.workerPeakMiB, (v) => v.toFixed(1)],
      ['api cpu ms/request', (p) => p.apiCpuMsPerRequest, (v) => v.toFixed(2)],
      ...CPU_PARTS.map((part): Figure => [`${part} cpu ms/create`, (p) => p.createCpu[part], (v) => v.toFixed(2)]),
    ] satisfies Figure[]
  ).filter(([, value]) => phases.every((p) => Number.isFinite(value(p))));
  const summary = figures.map(([name, value, show]) => {
    const of = (side: Side) => mean(phases.filter((p) => p.side === side).map(value));
    const perPair = pairChanges(phases, opts.pairs, value);
    console.log(
      `  ${name.padEnd(22)} ${show(of('against'))} -> ${show(of('this'))} (${pct(of('this') / of('against') - 1)}); per pair ${pct(perPair.median)} (${pct(perPair.min)} .. ${pct(perPair.max)})`,
    );
    return { name, this: of('this'), against: of('against'), perPair };
  });
  console.log(`  errors (failed streams, creates and reads; tasks not completed) ${phases.reduce((s, p) => s + failures(p), 0)}`);
  await temporal.connection.close();
  console.log(`\nresults written to ${writeBenchResults('video-ab', { options: opts, summary, phases })}`);
}

bench.run(main);
