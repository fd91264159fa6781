/**
 * bench:video's floor worker: a process that runs bench/floor-workflow.ts's workflow and its
 * empty activity on FLOOR_TASK_QUEUE of the dev server at TEMPORAL_ADDRESS, with the worker
 * settings of the gateway's worker that bear on cost, and stops on SIGTERM.
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import type { FloorActivities } from './floor-workflow';

async function main(): Promise<void> {
  const address = process.env.TEMPORAL_ADDRESS;
  const taskQueue = process.env.FLOOR_TASK_QUEUE;
  if (!address || !taskQueue) throw new Error('floor worker: TEMPORAL_ADDRESS and FLOOR_TASK_QUEUE are required');
  const connection = await NativeConnection.connect({ address });
  const activities: FloorActivities = { benchFloorStep: () => Promise.resolve() };
  const worker = await Worker.create({
    connection,
    taskQueue,
    workflowsPath: require.resolve('./floor-workflow'),
    activities,
    maxConcurrentWorkflowTaskExecutions: 100,
    maxConcurrentLocalActivityExecutions: 200,
  });
  process.once('SIGTERM', () => worker.shutdown());
  console.log('floor worker running');
  await worker.run();
  await connection.close();
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
