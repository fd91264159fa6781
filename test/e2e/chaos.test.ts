/**
 * The short run of `npm run chaos` (bench/chaos.ts), on both stacks: tasks and text requests
 * while the API, the worker and the Temporal dev server (scale-out), and `npm start`'s whole
 * process group or only its dev server (embedded), are SIGKILLed and brought back by a
 * supervisor. Nothing accepted is lost, nothing is charged twice or left unsettled, and the
 * ledger audit is clean. `npm run chaos` runs it longer.
 */
import fs from 'node:fs';
import path from 'node:path';
import { BenchChildren } from '../../bench/child-guard';
import { chaosProblems, formatReport, runChaos } from '../../bench/chaos-run';
import { embeddedStack, scaleOutStack } from '../../bench/chaos-stack';
import { TEST_DATA } from '../support/processes';
import { e2eEnv } from '../support/stack';

const children = new BenchChildren('the chaos test');
afterAll(() => children.cleanup(), 120_000);

test.each([
  ['scale-out', scaleOutStack, 11],
  ['embedded', embeddedStack, 12],
] as const)(
  'chaos on the %s stack: nothing lost, nothing charged twice, the audit clean',
  async (mode, stackOf, seed) => {
    const dir = path.join(TEST_DATA, `chaos-${mode}`);
    fs.mkdirSync(dir, { recursive: true });
    const stack = await stackOf(dir, e2eEnv().simulatorUrl, children);
    try {
      const report = await runChaos(stack, {
        seconds: 30,
        seed,
        killEvery: [5, 9],
        createsPerSecond: 2,
        textClients: 2,
        settleSeconds: 90,
        log: () => undefined,
      });
      console.log(formatReport(report));
      expect(report.kills.length).toBeGreaterThanOrEqual(3);
      expect(report.tasks.accepted).toBeGreaterThan(20);
      expect(chaosProblems(report)).toEqual([]);
    } finally {
      await stack.stop();
    }
  },
  300_000,
);
