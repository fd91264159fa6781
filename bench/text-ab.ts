/**
 * npm run bench:text-ab -- --against DIR [--billing on|off] [--against-billing on|off]
 *                          [--pairs 4] [--rounds 3] [--seconds 4] [--warmup-seconds 2]
 *                          [--concurrency 64] [--protocols anthropic,openai] [--modes plain,stream]
 *                          [--log-level info]
 *
 * This checkout's gateway against another checkout's (DIR, built: DIR/dist/src/api/server.js),
 * both running at once behind one provider simulator, measured at saturation in interleaved
 * phases. Two separate bench:text runs compare two moments of a shared machine as much as two
 * builds: on 2 shared cores the CPU time every process needs per request (the simulator's
 * too, whose code is the same in both) drifts by tens of percent within minutes, and one
 * process of a build can be 10-15 % faster than another of the same build for its whole life.
 * So: `--pairs` pairs of fresh gateway processes; per pair and per protocol x mode, `--rounds`
 * rounds of one closed-loop phase of `--seconds` per gateway, strictly alternating. Prints every
 * round (req/s, gateway CPU ms per request, the simulator's as the machine-speed control) and,
 * per protocol x mode, the means and the change of each pair. `--against` this very checkout is
 * an A/A run: what the bench itself cannot tell apart. Results also go to
 * bench-results/text-ab-<time>.json. See docs/bench-text.md.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { projectRoot } from '../src/config/paths';
import { freePort, waitFor } from '../test/support/ports';
import { runNode, type Child } from '../test/support/processes';
import { againstCheckout, numberOption, optionOf } from './ab-options';
import { mean, pairChanges, pct } from './ab-stats';
import { billingModeOf, type BillingMode } from './billing';
import { BenchChildren } from './child-guard';
import { writeBenchResults } from './results';
import { cpuMs, treeCpu, treeCpuDelta, treePids } from './proc-stats';
import { startTextGateway } from './text-gateway';
import { closedLoop, listOf, MODES, PROTOCOLS, scenario, type Mode, type Protocol, type Target } from './text-load';

interface Options {
  against: string;
  pairs: number;
  billing: BillingMode;
  againstBilling: BillingMode;
  rounds: number;
  seconds: number;
  warmupSeconds: number;
  concurrency: number;
  protocols: Protocol[];
  modes: Mode[];
  logLevel: string;
}

function parseArgs(argv: string[]): Options {
  const get = optionOf(argv);
  const count = (name: string, fallback: string, min: number) => numberOption(get, name, fallback, min);
  return {
    against: againstCheckout(get('against', ''), ['dist/src/api/server.js']),
    billing: billingModeOf(get('billing', 'on')),
    againstBilling: billingModeOf(get('against-billing', 'off')),
    pairs: Math.round(count('pairs', '4', 1)),
    rounds: Math.round(count('rounds', '3', 1)),
    seconds: count('seconds', '4', 0.5),
    warmupSeconds: count('warmup-seconds', '2', 0),
    concurrency: Math.round(count('concurrency', '64', 1)),
    protocols: listOf('protocols', get('protocols', PROTOCOLS.join(',')), PROTOCOLS),
    modes: listOf('modes', get('modes', MODES.join(',')), MODES),
    logLevel: get('log-level', 'info'),
  };
}

type Side = 'this' | 'against';

interface Gateway {
  side: Side;
  child: Child;
  target: Target<Side>;
  key: string;
}

interface Phase {
  protocol: Protocol;
  mode: Mode;
  side: Side;
  /** Which pair of gateway processes (1-based). */
  pair: number;
  round: number;
  requests: number;
  errors: number;
  rps: number;
  gatewayCpuMsPerRequest: number;
  simulatorCpuMsPerRequest: number;
  /** CPU the idle gateway used meanwhile, ms: should be about 0. */
  idleGatewayCpuMs: number;
}

const bench = new BenchChildren('the simulator and the gateways');

async function startGateway(side: Side, root: string, billing: BillingMode, simUrl: string, logLevel: string, benchData: string): Promise<Gateway> {
  const dataDir = path.join(benchData, `text-ab-${side}-${Date.now()}`);
  fs.mkdirSync(dataDir, { recursive: true });
  bench.removeAtEnd(dataDir);
  const log = path.join(benchData, `text-ab-${side}.log`);
  const gw = await startTextGateway({ bench, root, dataDir, simUrl, logLevel, log, billing, what: `${side} gateway` });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 256 });
  return { side, child: gw.child, target: { name: side, host: '127.0.0.1', port: gw.port, agent }, key: gw.key };
}

/** One closed-loop phase against one gateway, with the CPU of it, the simulator and the idle one. */
async function measure(
  gateways: Record<Side, Gateway>,
  sim: Child,
  at: Pick<Phase, 'protocol' | 'mode' | 'side' | 'pair' | 'round'>,
  opts: Options,
): Promise<Phase> {
  const gw = gateways[at.side];
  const idle = gateways[at.side === 'this' ? 'against' : 'this'];
  const sc = scenario(at.protocol, at.mode, gw.key);
  // A gateway is its API process and, from the store-process build on, the store's process below it.
  const tree = (g: Gateway) => (g.child.proc.pid ? treePids(g.child.proc.pid) : []);
  const before = { gw: treeCpu(tree(gw)), sim: cpuMs(sim.proc.pid), idle: treeCpu(tree(idle)) };
  const started = performance.now();
  const outcomes = await closedLoop(gw.target, sc, opts.concurrency, opts.seconds);
  const elapsedS = (performance.now() - started) / 1000;
  const after = { gw: treeCpu(tree(gw)), sim: cpuMs(sim.proc.pid), idle: treeCpu(tree(idle)) };
  const n = Math.max(1, outcomes.length);
  const errors = outcomes.filter((o) => o.error !== null).length;
  return {
    ...at,
    requests: outcomes.length,
    errors,
    rps: (outcomes.length - errors) / elapsedS,
    gatewayCpuMsPerRequest: treeCpuDelta(before.gw, after.gw) / n,
    simulatorCpuMsPerRequest: (after.sim - before.sim) / n,
    idleGatewayCpuMs: treeCpuDelta(before.idle, after.idle),
  };
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const root = projectRoot();
  const benchData = path.join(root, '.bench-data');
  fs.mkdirSync(benchData, { recursive: true });
  const simPort = await freePort();
  const simUrl = `http://127.0.0.1:${simPort}`;
  const simLog = path.join(benchData, 'text-ab-simulator.log');
  fs.writeFileSync(simLog, '');
  const sim = runNode('dist/simulator/main.js', { HOST: '127.0.0.1', SIMULATOR_PORT: String(simPort), LOG_LEVEL: 'warn' }, simLog, root);
  bench.add(sim);
  await waitFor('simulator', async () => (await fetch(`${simUrl}/_sim/health`)).ok, 20_000);
  console.log(`\nbench:text-ab  this checkout (${root}, billing ${opts.billing}) against ${opts.against} (billing ${opts.againstBilling})`);
  console.log(
    `saturation, ${opts.concurrency} connections; ${opts.pairs} pairs of gateway processes, each ${opts.rounds} rounds of ${opts.seconds} s per gateway per protocol and mode, strictly alternating; cpu = ms of CPU per request`,
  );

  const phases: Phase[] = [];
  for (let pair = 1; pair <= opts.pairs; pair += 1) {
    // Fresh processes per pair: one process of a build can run 10-15 % faster or slower than
    // another of the same build for its whole life, on the same core (an A/A run shows it), so
    // a comparison of one pair of processes compares their luck. Start order alternates too.
    const startOrder: Side[] = pair % 2 === 1 ? ['this', 'against'] : ['against', 'this'];
    const gateways = {} as Record<Side, Gateway>;
    for (const side of startOrder) {
      gateways[side] =
        side === 'this'
          ? await startGateway('this', root, opts.billing, simUrl, opts.logLevel, benchData)
          : await startGateway('against', opts.against, opts.againstBilling, simUrl, opts.logLevel, benchData);
    }
    console.log(`\nprocess pair ${pair}`);
    let block = pair;
    for (const protocol of opts.protocols) {
      for (const mode of opts.modes) {
        // Strictly alternating phases (ABAB..., never the same gateway twice in a row, so each
        // phase follows the other gateway's), the first side alternating between blocks: a
        // switch costs (idle upstream sockets closed, caches cold), and ABBA gives one side
        // more phases after a switch than the other. Warmed up in reverse order, so even the
        // first measured phase follows the other gateway's load.
        const order: Side[] = block % 2 === 1 ? ['this', 'against'] : ['against', 'this'];
        block += 1;
        if (opts.warmupSeconds > 0) {
          for (const side of [...order].reverse())
            await closedLoop(gateways[side].target, scenario(protocol, mode, gateways[side].key), opts.concurrency, opts.warmupSeconds);
        }
        for (let round = 1; round <= opts.rounds; round += 1) {
          const got = {} as Record<Side, Phase>;
          for (const side of order) {
            got[side] = await measure(gateways, sim, { protocol, mode, side, pair, round }, opts);
            phases.push(got[side]);
          }
          const a = got.this;
          const b = got.against;
          console.log(
            `  ${`${protocol} ${mode}`.padEnd(16)} round ${round}: this ${a.rps.toFixed(0).padStart(5)} req/s cpu ${a.gatewayCpuMsPerRequest.toFixed(3)} (sim ${a.simulatorCpuMsPerRequest.toFixed(3)})` +
              ` | against ${b.rps.toFixed(0).padStart(5)} req/s cpu ${b.gatewayCpuMsPerRequest.toFixed(3)} (sim ${b.simulatorCpuMsPerRequest.toFixed(3)})` +
              ` | req/s ${pct(a.rps / b.rps - 1)}${a.errors + b.errors > 0 ? ` | errors ${a.errors} / ${b.errors}` : ''}`,
          );
        }
      }
    }
    for (const gw of Object.values(gateways)) {
      gw.target.agent.destroy();
      await gw.child.stop(5000);
    }
  }

  console.log(`\nsummary (this against ${opts.against}): means over all rounds; per pair = change of the pair's mean req/s, median (min .. max)`);
  const summaries = [];
  for (const protocol of opts.protocols) {
    for (const mode of opts.modes) {
      const block = phases.filter((p) => p.protocol === protocol && p.mode === mode);
      const of = (side: Side) => block.filter((p) => p.side === side);
      const summary = {
        protocol,
        mode,
        rps: { this: mean(of('this').map((p) => p.rps)), against: mean(of('against').map((p) => p.rps)) },
        gatewayCpuMsPerRequest: {
          this: mean(of('this').map((p) => p.gatewayCpuMsPerRequest)),
          against: mean(of('against').map((p) => p.gatewayCpuMsPerRequest)),
        },
        simulatorCpuMsPerRequest: {
          this: mean(of('this').map((p) => p.simulatorCpuMsPerRequest)),
          against: mean(of('against').map((p) => p.simulatorCpuMsPerRequest)),
        },
        pairChange: pairChanges(block, opts.pairs, (p) => p.rps),
        errors: { this: of('this').reduce((s, p) => s + p.errors, 0), against: of('against').reduce((s, p) => s + p.errors, 0) },
        maxIdleGatewayCpuMs: Math.max(...block.map((p) => p.idleGatewayCpuMs)),
      };
      summaries.push(summary);
      console.log(
        `  ${`${protocol} ${mode}`.padEnd(16)} req/s ${summary.rps.against.toFixed(0)} -> ${summary.rps.this.toFixed(0)} (${pct(summary.rps.this / summary.rps.against - 1)});` +
          ` per pair ${pct(summary.pairChange.median)} (${pct(summary.pairChange.min)} .. ${pct(summary.pairChange.max)});` +
          ` gateway cpu ${summary.gatewayCpuMsPerRequest.against.toFixed(3)} -> ${summary.gatewayCpuMsPerRequest.this.toFixed(3)} ms/req` +
          ` (${pct(summary.gatewayCpuMsPerRequest.this / summary.gatewayCpuMsPerRequest.against - 1)});` +
          ` sim cpu ${summary.simulatorCpuMsPerRequest.against.toFixed(3)} -> ${summary.simulatorCpuMsPerRequest.this.toFixed(3)};` +
          ` errors ${summary.errors.this} / ${summary.errors.against}; idle gateway at most ${summary.maxIdleGatewayCpuMs.toFixed(0)} ms per phase`,
      );
    }
  }

  console.log(`\nresults written to ${writeBenchResults('text-ab', { options: opts, node: process.version, summaries, phases })}`);
}

bench.run(main);
