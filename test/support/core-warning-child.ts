/**
 * A worker process wired as the gateway's (installTemporalRuntime) that makes the Temporal core
 * log a warning of its own, for test/e2e/temporal-sdk-log.test.ts:
 * `node dist/test/support/core-warning-child.js <temporal address>`. Its activity completes after
 * its workflow was terminated, so the server answers the completion NotFound and the core warns
 * "Activity not found on completion". The gateway's log lines go to stdout.
 */
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createLogger } from '../../src/log';
import { installTemporalRuntime } from '../../src/temporal/runtime';

async function main(): Promise<void> {
  const [address] = process.argv.slice(2);
  if (!address) throw new Error('usage: core-warning-child <temporal address>');
  installTemporalRuntime(createLogger('info', 'core-warning-child'), false);
  const taskQueue = `core-warning-${process.pid}`;
  let started = () => {};
  const running = new Promise<void>((resolve) => (started = resolve));
  let finish = () => {};
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const connection = await NativeConnection.connect({ address });
  const worker = await Worker.create({
    connection,
    taskQueue,
    workflowsPath: path.join(__dirname, 'core-warning-workflow.js'),
    activities: {
      outlive: async () => {
        started();
        await finished;
      },
    },
  });
  const clientConnection = await Connection.connect({ address });
  await worker.runUntil(async () => {
    const client = new Client({ connection: clientConnection });
    const handle = await client.workflow.start('outlivedByItsActivity', { taskQueue, workflowId: taskQueue });
    await running;
    await handle.terminate('the activity outlives its run');
    finish();
    // The completion's answer, and the core's warning about it, arrive a moment later.
    await new Promise((resolve) => setTimeout(resolve, 2000));
  });
  await clientConnection.close();
  await connection.close();
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
