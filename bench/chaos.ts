/**
 * npm run chaos -- [--seconds 120] [--mode both|scale-out|embedded] [--seed 1] [--kill-every 4,10]
 *                  [--creates-per-second 2] [--text-clients 4] [--settle-seconds 120] [--json <file>]
 *
 * Attacks the real stack with the provider simulator as a separate process: waves of video tasks
 * and text requests while the API, the worker, the Temporal dev server (scale-out), and
 * `npm start`'s whole process group or only its dev server (embedded) are SIGKILLed at random
 * moments and started again by a supervisor. Prints per stack: tasks accepted / completed /
 * failed / lost, text answered and cut, charges, refunds, double charges, charges nobody was
 * told of, wrong settlements, the ledger audit, and per kill the time until creates and text
 * answered again. Exits 1 when anything that must never happen did (chaos-run.ts chaosProblems).
 * A short run is part of `npm test` (test/e2e/chaos.test.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, waitFor } from '../test/support/ports';
import { runNode } from '../test/support/processes';
import { BenchChildren } from './child-guard';
import { chaosProblems, formatReport, runChaos, type ChaosReport } from './chaos-run';
import { embeddedStack, scaleOutStack } from './chaos-stack';

interface Options {
  seconds: number;
  mode: 'both' | 'scale-out' | 'embedded';
  seed: number;
  killEvery: [number, number];
  createsPerSecond: number;
  textClients: number;
  settleSeconds: number;
  json: string | null;
}

function parse(argv: string[]): Options {
  const opts: Options = { seconds: 120, mode: 'both', seed: 1, killEvery: [4, 10], createsPerSecond: 2, textClients: 4, settleSeconds: 120, json: null };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1] ?? ''];
    const num = (min: number) => {
      const n = Number(value);
      if (!Number.isFinite(n) || n < min) throw new Error(`${flag} takes a number >= ${min}, not '${value}'`);
      return n;
    };
    switch (flag) {
      case '--seconds':
        opts.seconds = num(5);
        break;
      case '--seed':
        opts.seed = num(0);
        break;
      case '--creates-per-second':
        opts.createsPerSecond = num(0.1);
        break;
      case '--text-clients':
        opts.textClients = num(0);
        break;
      case '--settle-seconds':
        opts.settleSeconds = num(10);
        break;
      case '--json':
        opts.json = value;
        break;
      case '--mode':
        if (value !== 'both' && value !== 'scale-out' && value !== 'embedded') throw new Error(`--mode takes both, scale-out or embedded, not '${value}'`);
        opts.mode = value;
        break;
      case '--kill-every': {
        const [min, max] = value.split(',').map(Number);
        if (!(min! > 0 && max! >= min!)) throw new Error(`--kill-every takes min,max seconds, not '${value}'`);
        opts.killEvery = [min!, max!];
        break;
      }
      default:
        throw new Error(`unknown option ${flag} (see the header of bench/chaos.ts)`);
    }
  }
  return opts;
}

async function main(): Promise<void> {
  const opts = parse(process.argv.slice(2));
  const children = new BenchChildren('the chaos run');
  let failed = false;
  children.run(async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-chaos-'));
    children.removeAtEnd(dir);
    const simPort = await freePort();
    const simulatorUrl = `http://127.0.0.1:${simPort}`;
    children.add(
      runNode('dist/simulator/main.js', { HOST: '127.0.0.1', SIMULATOR_PORT: String(simPort), SIMULATOR_JOB_MS: '2000' }, path.join(dir, 'simulator.log')),
    );
    await waitFor('the simulator', async () => (await fetch(`${simulatorUrl}/_sim/health`)).ok, 20_000);
    const reports: ChaosReport[] = [];
    const modes = opts.mode === 'both' ? (['scale-out', 'embedded'] as const) : [opts.mode];
    for (const mode of modes) {
      const stackDir = path.join(dir, mode);
      fs.mkdirSync(stackDir, { recursive: true });
      const stack = mode === 'scale-out' ? await scaleOutStack(stackDir, simulatorUrl, children) : await embeddedStack(stackDir, simulatorUrl, children);
      const report = await runChaos(stack, { ...opts, log: (line) => console.log(`[${mode}] ${line}`) });
      await stack.stop();
      console.log(`\n${formatReport(report)}`);
      const problems = chaosProblems(report);
      for (const p of problems) console.log(`  PROBLEM   ${p}`);
      if (problems.length > 0) {
        failed = true;
        console.log(`  logs kept in ${path.join(os.tmpdir(), 'gw-chaos-logs')}`);
        fs.cpSync(stackDir, path.join(os.tmpdir(), 'gw-chaos-logs', mode), {
          recursive: true,
          filter: (src) => fs.statSync(src).isDirectory() || src.endsWith('.log'),
        });
      }
      reports.push(report);
    }
    if (opts.json) fs.writeFileSync(opts.json, JSON.stringify(reports, null, 2));
    if (failed) process.exitCode = 1;
  });
}

void main();
