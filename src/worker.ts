/**
 * The worker: runs task workflows and their activities. `npm run worker` starts it alone
 * against TEMPORAL_ADDRESS (scale-out); `npm start` runs it inside the embedded process.
 */
import fs from 'node:fs';
import { Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { Logger } from 'pino';
import { createBillingActivities } from './activities/billing-activities';
import { chatModelEnhancer, passThroughEnhancer } from './activities/prompt-enhancer';
import { createVideoActivities } from './activities/video-activities';
import { loadVideoChannels } from './config/channels';
import { loadConfig, type Config } from './config/env';
import { workflowBundlePath } from './config/paths';
import { createLogger } from './log';
import { BlobStore } from './storage/blob-store';
import { BillingStore } from './store/billing';
import type { Db } from './store/db';
import { openStore } from './store/open';
import { ensureRetention } from './temporal/namespace-retention';
import { ensureSearchAttributes } from './temporal/register-search-attributes';
import { installTemporalRuntime } from './temporal/runtime';

/** The worker settles task charges, so it uses the gateway's store (db). */
export async function createGatewayWorker(config: Config, logger: Logger, connection: NativeConnection, db: Db): Promise<Worker> {
  const env = config.env;
  const channels = loadVideoChannels(config);
  const enhancer =
    env.PROMPT_ENHANCER_BASE_URL && env.PROMPT_ENHANCER_MODEL
      ? chatModelEnhancer(env.PROMPT_ENHANCER_BASE_URL, env.PROMPT_ENHANCER_API_KEY ?? '', env.PROMPT_ENHANCER_MODEL, env.UPSTREAM_TIMEOUT_MS)
      : passThroughEnhancer;
  const billing = new BillingStore(db);
  const videoActivities = createVideoActivities({
    channels,
    blobs: new BlobStore(config.storageDir),
    enhancer,
    upstreamTimeoutMs: env.UPSTREAM_TIMEOUT_MS,
    retryInitialMs: env.UPSTREAM_RETRY_INITIAL_MS,
    retryMaxMs: env.UPSTREAM_RETRY_MAX_MS,
    fetchAllowPrivate: env.FETCH_ALLOW_PRIVATE,
    fetchMaxBytes: env.FETCH_MAX_BYTES,
    settleCompleted: (taskId) => billing.completeTask(taskId),
  });
  const activities = { ...videoActivities, ...createBillingActivities(billing) };
  const bundle = workflowBundlePath();
  const workflowSource = fs.existsSync(bundle)
    ? { workflowBundle: { codePath: bundle } }
    : { workflowsPath: require.resolve('./workflows') };
  logger.info(
    { taskQueue: env.TEMPORAL_TASK_QUEUE, channels: channels.map((c) => `${c.name}(${c.type}${c.simulated ? ', simulator' : ''})`), enhancer: enhancer.kind },
    'worker starting',
  );
  return Worker.create({
    connection,
    namespace: env.TEMPORAL_NAMESPACE,
    taskQueue: env.TEMPORAL_TASK_QUEUE,
    activities,
    ...workflowSource,
    // Tasks mostly sleep between polls: many may be open at once for little CPU.
    maxConcurrentActivityTaskExecutions: 200,
    maxConcurrentLocalActivityExecutions: 200,
    maxConcurrentWorkflowTaskExecutions: 100,
    shutdownGraceTime: '10s',
  });
}

export async function connectNative(address: string, namespace: string, logger: Logger): Promise<NativeConnection> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await NativeConnection.connect({ address });
    } catch (err) {
      if (attempt === 1 || attempt % 10 === 0) logger.warn({ address, namespace, err: (err as Error).message }, 'waiting for Temporal');
      await new Promise((r) => setTimeout(r, Math.min(5000, 250 * attempt)));
    }
  }
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.env.LOG_LEVEL, 'worker');
  if (!config.env.DATABASE_URL) {
    // The embedded store belongs to one process (`npm start`); a worker of its own shares
    // the API's balances only through PostgreSQL.
    throw new Error('A standalone worker settles task charges in the shared store: set DATABASE_URL (the embedded store serves `npm start` only).');
  }
  installTemporalRuntime(logger, true);
  const db = await openStore(config);
  const connection = await connectNative(config.temporalAddress, config.env.TEMPORAL_NAMESPACE, logger);
  const client = await Connection.connect({ address: config.temporalAddress });
  await ensureSearchAttributes(client, config.env.TEMPORAL_NAMESPACE, logger);
  await ensureRetention(client, config.env.TEMPORAL_NAMESPACE, config.env.TASK_RETENTION_DAYS, false, logger);
  await client.close();
  const worker = await createGatewayWorker(config, logger, connection, db);
  const running = worker.run();
  logger.info({ taskQueue: config.env.TEMPORAL_TASK_QUEUE }, 'worker running');
  await running;
  await connection.close();
  await db.close();
  logger.info('worker stopped');
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
