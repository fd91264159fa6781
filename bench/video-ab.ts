/**
 * npm run bench:video-ab -- --against DIR [--billing on|off] [--against-billing on|off]
 *                           [--pairs 3] [--rounds 4] [--streams 50] [--creates 100]
 *                           [--concurrency 50] [--job-ms 3000] [--poll-ms 1000] [--cpu-prof DIR]
 *
 * The video paths of this checkout's gateway against another checkout's (DIR, built), both
 * stacks (API and worker processes, each with a PostgreSQL database of its own) running at once
 * on one Temporal dev server (a task queue each) and one provider simulator, loaded in turn:
 * the bursts of bench:video, where a change shows first, measured on one stack while the other
 * is idle. Per pair of fresh stacks, `--rounds` rounds; per round and stack, strictly
 * alternating (the side that goes first alternates between pairs):
 *   - `--streams` streamed video chat completions sent at once: time to the first chunk;
 *   - `--creates` /v1/video/create calls by `--concurrency` clients: creates/s and p50;
 *   - then a wait until every task of the round has completed, so the next phase starts on a
 *     quiet machine.
 * Prints every round and, per figure, the means and the change of each pair of stacks. Results
 * also go to bench-results/video-ab-<time>.json. `--cpu-prof DIR` writes a CPU profile of each
 * API process into DIR/<side>-<pair>/, to compare where two builds spend the same load's CPU.
 * See docs/bench-billing.md.
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
import { mean, pairChanges, pct } from './ab-stats';
import { benchDatabase, benchKeyBody, billingModeOf, type BillingMode } from './billing';
import { cpuMs } from './proc-stats';
import { chatStreamBurst, createWave, percentile } from './video-load';

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
  };
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
  createErrors: number;
  /** CPU ms of the API process per request (streams and creates). */
  apiCpuMsPerRequest: number;
}

const ms = (v: number) => `${v.toFixed(0)} ms`;

async function startStack(side: Side, pair: number, root: string, billing: BillingMode, shared: { temporalAddress: string; simUrl: string; runDir: string; pollMs: number; cpuProfDir: string }): Promise<Stack> {
  const port = await freePort();
  const api = `http://127.0.0.1:${port}`;
  const database = await benchDatabase(`ab_${side}`);
  const dataDir = path.join(shared.runDir, `${side}-${pair}`);
  fs.mkdirSync(dataDir, { recursive: true });
  const env = {
    DATABASE_URL: database.url, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, ADMIN_TOKEN: 'bench-admin', LOG_LEVEL: 'warn',
    TEMPORAL_ADDRESS: shared.temporalAddress, TEMPORAL_TASK_QUEUE: `bench-ab-${side}-${pair}`, SIMULATOR_URL: shared.simUrl, UPSTREAM_POLL_MS: String(shared.pollMs),
  };
  const profile = shared.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${path.join(shared.cpuProfDir, `${side}-${pair}`)}`] : [];
  const apiProc = runNode('dist/src/api/server.js', env, `bench-ab-${side}-api`, root, profile);
  const workerProc = runNode('dist/src/worker.js', env, `bench-ab-${side}-worker`, root);
  const stack = { side, api, auth: {}, apiProc, workerProc, dropDatabase: database.drop };
  await waitFor(`${side} gateway healthy`, async () => {
    if (apiProc.proc.exitCode !== null || workerProc.proc.exitCode !== null) throw new Error(`the ${side} gateway exited (see .test-data/bench-ab-${side}-*.log)`);
    return (await fetch(`${api}/healthz`)).status === 200;
  }, 90_000, 250);
  const issued = (await (await fetch(`${api}/admin/keys`, {
    method: 'POST', headers: { authorization: 'Bearer bench-admin', 'content-type': 'application/json' }, body: JSON.stringify(benchKeyBody(billing)),
  })).json()) as { key: string };
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
  await waitFor('the round\'s tasks to complete', async () => (await temporal.workflow.count(`GatewayOwner = "${owner}" AND ExecutionStatus = "Running"`)).count === 0, 300_000, 500);
}

async function measure(stack: Stack, temporal: Client, opts: Options, at: Pick<Phase, 'side' | 'pair' | 'round'>): Promise<Phase> {
  const cpuBefore = cpuMs(stack.apiProc.proc.pid);
  const burst = await chatStreamBurst(stack.api, stack.auth, { streams: opts.streams, jobMs: opts.jobMs });
  const wave = await createWave(stack.api, stack.auth, { n: opts.creates, concurrency: opts.concurrency, jobMs: opts.jobMs, rate: 0, label: `${at.side}-${at.pair}-${at.round}` });
  const apiCpuMsPerRequest = (cpuMs(stack.apiProc.proc.pid) - cpuBefore) / (opts.streams + opts.creates);
  await waitIdle(temporal, wave.ids[0] ?? burst.outcomes[0]?.taskId);
  return {
    ...at,
    firstChunkP50: percentile(burst.firstChunkMs, 50), firstChunkP99: percentile(burst.firstChunkMs, 99), streamErrors: burst.errors,
    createsPerSecond: opts.creates / wave.seconds, createP50: percentile(wave.latencies, 50), createErrors: wave.errors,
    apiCpuMsPerRequest,
  };
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const root = projectRoot();
  const runDir = path.join(root, '.bench-data', `video-ab-${Date.now()}`);
  fs.mkdirSync(runDir, { recursive: true });
  const temporalServer = await startDevServer({
    cliPath: temporalCliPath(), dataDir: runDir, port: await freePort(), uiPort: await freePort(), namespace: 'default', logger: createLogger('warn', 'bench'), headless: true,
  });
  const children: Child[] = [];
  const stacks: Stack[] = [];
  try {
    const simPort = await freePort();
    const simUrl = `http://127.0.0.1:${simPort}`;
    const sim = runNode('dist/src/simulator/main.js', { HOST: '127.0.0.1', SIMULATOR_PORT: String(simPort), LOG_LEVEL: 'warn' }, 'bench-ab-simulator', root);
    children.push(sim);
    await waitFor('simulator', async () => (await fetch(`${simUrl}/_sim/health`)).ok, 20_000);
    const temporal = new Client({ connection: await Connection.connect({ address: temporalServer.address }) });
    const shared = { temporalAddress: temporalServer.address, simUrl, runDir, pollMs: opts.pollMs, cpuProfDir: opts.cpuProfDir };

    console.log(`\nbench:video-ab  this checkout (${root}, billing ${opts.billing}) against ${opts.against} (billing ${opts.againstBilling})`);
    console.log(`${opts.pairs} pairs of stacks x ${opts.rounds} rounds; per round and stack: ${opts.streams} chat streams at once, then ${opts.creates} creates by ${opts.concurrency} clients (job ${opts.jobMs} ms), then idle`);
    const phases: Phase[] = [];
    for (let pair = 1; pair <= opts.pairs; pair += 1) {
      const order: Side[] = pair % 2 === 1 ? ['this', 'against'] : ['against', 'this'];
      const byside = {} as Record<Side, Stack>;
      for (const side of order) {
        byside[side] = await startStack(side, pair, side === 'this' ? root : opts.against, side === 'this' ? opts.billing : opts.againstBilling, shared);
        stacks.push(byside[side]);
      }
      console.log(`\nstack pair ${pair}`);
      // Warm-up, discarded, in reverse order so the first measured phase follows the other stack's.
      for (const side of [...order].reverse()) await measure(byside[side], temporal, opts, { side, pair, round: 0 });
      for (let round = 1; round <= opts.rounds; round += 1) {
        const got = {} as Record<Side, Phase>;
        for (const side of order) {
          got[side] = await measure(byside[side], temporal, opts, { side, pair, round });
          phases.push(got[side]);
        }
        const a = got.this;
        const b = got.against;
        console.log(`  round ${round}: first chunk p50 this ${ms(a.firstChunkP50)} against ${ms(b.firstChunkP50)} (${pct(a.firstChunkP50 / b.firstChunkP50 - 1)})`
          + ` | creates/s ${a.createsPerSecond.toFixed(1)} / ${b.createsPerSecond.toFixed(1)} (${pct(a.createsPerSecond / b.createsPerSecond - 1)})`
          + ` | create p50 ${ms(a.createP50)} / ${ms(b.createP50)} | api cpu ms/req ${a.apiCpuMsPerRequest.toFixed(2)} / ${b.apiCpuMsPerRequest.toFixed(2)}`
          + `${a.streamErrors + b.streamErrors + a.createErrors + b.createErrors > 0 ? ` | errors ${a.streamErrors + a.createErrors} / ${b.streamErrors + b.createErrors}` : ''}`);
      }
      for (const side of order) await stopStack(byside[side]);
      stacks.length = 0;
    }

    console.log(`\nsummary (this against ${opts.against}): means over all rounds, this against; per pair = change of the pair's means, median (min .. max)`);
    const figures: Array<[string, (p: Phase) => number, (v: number) => string]> = [
      ['chat first chunk p50', (p) => p.firstChunkP50, ms],
      ['chat first chunk p99', (p) => p.firstChunkP99, ms],
      ['creates/s', (p) => p.createsPerSecond, (v) => v.toFixed(1)],
      ['create p50', (p) => p.createP50, ms],
      ['api cpu ms/request', (p) => p.apiCpuMsPerRequest, (v) => v.toFixed(2)],
    ];
    const summary = figures.map(([name, value, show]) => {
      const of = (side: Side) => mean(phases.filter((p) => p.side === side).map(value));
      const perPair = pairChanges(phases, opts.pairs, value);
      console.log(`  ${name.padEnd(22)} ${show(of('against'))} -> ${show(of('this'))} (${pct(of('this') / of('against') - 1)}); per pair ${pct(perPair.median)} (${pct(perPair.min)} .. ${pct(perPair.max)})`);
      return { name, this: of('this'), against: of('against'), perPair };
    });
    const errors = phases.reduce((s, p) => s + p.streamErrors + p.createErrors, 0);
    console.log(`  errors ${errors}`);
    await temporal.connection.close();
    const out = path.join(root, 'bench-results');
    fs.mkdirSync(out, { recursive: true });
    const file = path.join(out, `video-ab-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    fs.writeFileSync(file, JSON.stringify({ options: opts, summary, phases }, null, 2));
    console.log(`\nresults written to ${path.relative(root, file)}`);
  } finally {
    await Promise.all(stacks.map(stopStack));
    await Promise.all(children.map((c) => c.stop()));
    await temporalServer.stop();
    fs.rmSync(runDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
