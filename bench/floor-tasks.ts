/**
 * bench:video's floor: what the least durable task costs on the same dev server, in the same
 * run. A floor task is a workflow that runs one empty activity and ends (floor-workflow.ts),
 * run by a worker process of its own (floor-worker.ts): one start, two workflow tasks, one
 * activity task, eleven history events. Far less than a gateway task does, and nothing a
 * gateway task can go below with one workflow per task. Its CPU per task, dev server plus
 * worker, is what a gateway task's life cost is read against.
 */
import fs from 'node:fs';
import type { Client } from '@temporalio/client';
import { waitFor } from '../test/support/ports';
import { projectRoot } from '../src/config/paths';
import type { BenchChildren } from './child-guard';
import { cpuPerItem, cpuSnapshot } from './cpu';
import { runScript } from './script-command';
import { pool } from './video-load';

const FLOOR_TASK_QUEUE = 'bench-floor-tasks';

export interface FloorCost {
  tasks: number;
  /** Tasks from the first start to the last completion, per second. */
  perSecond: number;
  /** CPU ms per task over its life: the dev server, the floor worker, and the bench's client. */
  devServerMs: number;
  workerMs: number;
  clientMs: number;
  historyEvents: number;
}

/**
 * Runs n floor tasks (started by `concurrency` clients, like the creates) to their end and
 * answers their cost. The floor worker is started before and stopped after, so that it runs
 * while the gateway has no work, and the gateway's wave runs without it.
 */
export async function floorTaskCost(
  bench: BenchChildren,
  temporal: Client,
  worker: { address: string; log: string },
  n: number,
  concurrency: number,
): Promise<FloorCost> {
  const child = bench.add(
    runScript('worker', { TEMPORAL_ADDRESS: worker.address, FLOOR_TASK_QUEUE }, worker.log, projectRoot(), [], 'dist/bench/floor-worker.js'),
  );
  try {
    // It bundles its workflow first, which takes seconds.
    await waitFor(
      'floor worker',
      () => Promise.resolve(fs.existsSync(worker.log) && fs.readFileSync(worker.log, 'utf8').includes('floor worker running')),
      120_000,
      200,
    );
    const run = Date.now();
    const ids = Array.from({ length: n }, (_, i) => `bench-floor-${run}-${i}`);
    const running = `WorkflowType = "benchFloorTask" AND ExecutionStatus = "Running"`;
    const cpu = () => cpuSnapshot({ worker: child.proc.pid }, { temporal: 'temporal' });
    const before = cpu();
    const startedAt = performance.now();
    await pool(ids, concurrency, async (workflowId) => {
      await temporal.workflow.start('benchFloorTask', { taskQueue: FLOOR_TASK_QUEUE, workflowId, args: [] });
    });
    await waitFor('floor tasks completed', async () => (await temporal.workflow.count(running)).count === 0, 300_000, 1000);
    const seconds = (performance.now() - startedAt) / 1000;
    const per = cpuPerItem(before, cpu(), n);
    const history = (await temporal.workflow.getHandle(ids[0]!).describe()).historyLength;
    return {
      tasks: n,
      perSecond: n / seconds,
      devServerMs: per.temporal ?? NaN,
      workerMs: per.worker ?? NaN,
      clientMs: per.bench ?? NaN,
      historyEvents: history,
    };
  } finally {
    await child.stop(10_000);
  }
}
