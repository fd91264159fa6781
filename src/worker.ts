/**
 * The worker: runs task workflows and their activities. `npm run worker` starts it alone
 * against TEMPORAL_ADDRESS (scale-out); `npm start` runs it inside the embedded process.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { Logger } from 'pino';
import { createBillingActivities } from './billing/charge-activities';
import { chatModelEnhancer, passThroughEnhancer } from './activities/prompt-enhancer';
import { createVideoActivities } from './activities/video-activities';
import { isTextChannel, isVideoChannel, loadChannels } from './config/channels';
import { createResponseActivities } from './activities/response-activities';
import { loadPrices } from './billing/price-config';
import { responsesProtocol } from './providers/openai-responses/protocol';
import { ResponseStore } from './store/responses';
import { reportUpstreamFailuresTo } from './providers/http';
import { loadConfig, type Config } from './config/env';
import { tracedWorkflowBundlePath, workflowBundlePath } from './config/paths';
import { createLogger } from './log';
import { startMetricsServer } from './metrics/metrics-server';
import { UserUrlFetcher } from './net/user-url-fetcher';
import { sweepStaleFetches } from './net/url-guard';
import { BlobStore } from './files/blob-store';
import { BillingStore } from './billing/ledger';
import { ChannelErrorLog } from './store/channel-errors';
import type { Db } from './store/db';
import { openStore } from './store/open';
import { ensureRetention } from './temporal/namespace-retention';
import { ensureSearchAttributes } from './temporal/register-search-attributes';
import { watchReachability } from './temporal/reachability-watchdog';
import { installTemporalRuntime } from './temporal/runtime';
import { startTracing, type ProcessTracing } from './telemetry/tracing';
import { persistentSecret } from './config/secrets';
import { UrlSigner } from './files/signed-url';
import { WebhookStore } from './store/webhooks';
import { TaskViews } from './tasks/task-views';
import { taskViewSinks } from './temporal/task-view-sinks';
import { workerTuning } from './temporal/worker-tuning';
import { createWebhookActivities } from './webhooks/activities';
import { deliveryStarter } from './webhooks/delivery-starter';

/** User-URL fetches are written here, and removed as soon as they are read. */
const fetchTempDir = (config: Config): string => path.join(config.dataDir, 'tmp', 'fetches');
const STALE_FETCH_MS = 60 * 60 * 1000;
/**
 * Heartbeats reach the server this often at most, so a cancelled task's user-URL fetch stops
 * within about this long. A watched job sends far fewer (activities/watch-job.ts: its status at
 * once, its progress every PROGRESS_UPDATE_STEP points and PROGRESS_UPDATE_MS at most), so this
 * does not set what progress costs the server.
 */
const HEARTBEAT_THROTTLE = '1s';

/** One poll of a background response: short, so a hung poll ends well inside the watch's heartbeat timeout. */
const RESPONSE_POLL_TIMEOUT_MS = 20_000;

/**
 * The worker settles task charges, so it uses the gateway's store (db). With `tracing`, it runs
 * the traced workflow bundle and Temporal's activity interceptors (telemetry/temporal-tracing.ts).
 */
export async function createGatewayWorker(
  config: Config,
  logger: Logger,
  connection: NativeConnection,
  db: Db,
  tracing: ProcessTracing | null = null,
): Promise<Worker> {
  const env = config.env;
  // CHANNELS_FILE read once: video channels for tasks, openai-responses ones for background responses.
  const configured = loadChannels(config);
  const channels = configured.filter(isVideoChannel);
  const enhancer =
    env.PROMPT_ENHANCER_BASE_URL && env.PROMPT_ENHANCER_MODEL
      ? chatModelEnhancer(env.PROMPT_ENHANCER_BASE_URL, env.PROMPT_ENHANCER_API_KEY ?? '', env.PROMPT_ENHANCER_MODEL, env.UPSTREAM_TIMEOUT_MS)
      : passThroughEnhancer;
  const billing = new BillingStore(db);
  // Video tasks' views, written by their workflows (the sink) and watching steps; read by the API.
  const views = new TaskViews(db, env.TASK_RETENTION_DAYS);
  // The failures of upstream video requests, for the operator's channel view (GET /admin/channels).
  const channelErrors = new ChannelErrorLog(db, logger);
  reportUpstreamFailuresTo((channel, retryable, message) => channelErrors.record(channel, retryable, message));
  const userFetches = new UserUrlFetcher({
    allowPrivate: env.FETCH_ALLOW_PRIVATE,
    maxBytes: env.FETCH_MAX_BYTES,
    deadlineMs: env.FETCH_TIMEOUT_MS,
    idleTimeoutMs: Math.min(env.UPSTREAM_TIMEOUT_MS, env.FETCH_TIMEOUT_MS),
    maxPerKey: env.FETCH_MAX_PER_KEY,
    tempDir: fetchTempDir(config),
  });
  // Files of fetches cut short by a crash; a live fetch's file is minutes old at most.
  await sweepStaleFetches(userFetches.settings.tempDir, STALE_FETCH_MS).catch((err: unknown) =>
    logger.warn({ err: (err as Error).message }, 'stale fetch files could not be removed'),
  );
  const videoActivities = createVideoActivities({
    channels,
    blobs: new BlobStore(config.storageDir),
    enhancer,
    upstreamTimeoutMs: env.UPSTREAM_TIMEOUT_MS,
    retryInitialMs: env.UPSTREAM_RETRY_INITIAL_MS,
    retryMaxMs: env.UPSTREAM_RETRY_MAX_MS,
    userFetches,
    settleCompleted: (taskId) => billing.completeTask(taskId),
    progressEveryMs: env.PROGRESS_UPDATE_MS,
    progressStep: env.PROGRESS_UPDATE_STEP,
    pollGridMs: env.UPSTREAM_POLL_GRID_MS,
    log: logger,
    views,
  });
  // Completion webhooks: the announce step starts delivery workflows on this task queue. The
  // signer is the API's (same secret, from the environment or the data directory), so the
  // video_url in an event opens like the one a status read returns.
  const deliveries = deliveryStarter(config.temporalAddress, env.TEMPORAL_NAMESPACE, env.TEMPORAL_TASK_QUEUE);
  const webhookActivities = createWebhookActivities({
    store: new WebhookStore(db),
    signer: new UrlSigner(
      persistentSecret(config.dataDir, 'url-signing-secret', env.URL_SIGNING_SECRET).value,
      config.publicBaseUrl,
      env.VIDEO_URL_TTL_SECONDS,
    ),
    settings: {
      allowHttp: env.WEBHOOK_ALLOW_HTTP,
      allowPrivate: env.WEBHOOK_ALLOW_PRIVATE,
      timeoutMs: env.WEBHOOK_TIMEOUT_MS,
      retryInitialMs: env.WEBHOOK_RETRY_INITIAL_MS,
      retryMaxMs: env.WEBHOOK_RETRY_MAX_MS,
      deliverForMs: env.WEBHOOK_DELIVERY_HOURS * 3_600_000,
      keepDays: env.TASK_RETENTION_DAYS,
    },
    startDelivery: deliveries.start,
  });
  // Background responses: created, watched and settled on the `openai-responses` channels.
  const responseActivities = createResponseActivities({
    store: new ResponseStore(db),
    billing,
    prices: loadPrices(env.PRICES_FILE),
    channels: configured.filter(isTextChannel).filter((c) => c.type === responsesProtocol.channelType),
    timeouts: { requestMs: env.UPSTREAM_TIMEOUT_MS, pollMs: Math.min(env.UPSTREAM_TIMEOUT_MS, RESPONSE_POLL_TIMEOUT_MS) },
    announce: webhookActivities.announceTerminal,
    logger,
    pollGridMs: env.UPSTREAM_POLL_GRID_MS,
  });
  const activities = { ...videoActivities, ...createBillingActivities(billing), ...webhookActivities, ...responseActivities };
  // Loaded only with tracing on: without it no OpenTelemetry module is ever required.
  const traced = tracing ? (await import('./telemetry/temporal-tracing')).tracedWorkerOptions(tracing) : null;
  const bundle = traced ? tracedWorkflowBundlePath() : workflowBundlePath();
  const workflowSource = fs.existsSync(bundle) ? { workflowBundle: { codePath: bundle } } : { workflowsPath: require.resolve('./workflows') };
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
    ...(traced ?? {}),
    sinks: { ...traced?.sinks, ...taskViewSinks(views, logger) },
    ...workerTuning(env),
    shutdownGraceTime: '10s',
    // The default applies to steps with no heartbeat timeout, the maximum to those with one
    // (else 80 % of their timeout, 12 s for the upstream steps).
    defaultHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
    maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
  });
}

/**
 * Connects to Temporal, waiting for it while it is not up yet; with giveUpAfterMs > 0 it
 * stops waiting after that long and rejects (the standalone worker then exits 1 instead of
 * waiting unseen for ever).
 */
export async function connectNative(address: string, namespace: string, logger: Logger, giveUpAfterMs = 0): Promise<NativeConnection> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await NativeConnection.connect({ address });
    } catch (err) {
      const message = (err as Error).message.split('\n')[0];
      if (giveUpAfterMs > 0 && Date.now() - started >= giveUpAfterMs) {
        throw new Error(`Temporal at ${address} did not answer for ${Math.round((Date.now() - started) / 1000)} s (TEMPORAL_LOST_EXIT_SECONDS): ${message}`);
      }
      if (attempt === 1 || attempt % 10 === 0) logger.warn({ address, namespace, err: message }, 'waiting for Temporal');
      await new Promise((r) => setTimeout(r, Math.min(5000, 250 * attempt)));
    }
  }
}

/** How long a worker that lost Temporal may take to shut down before it is made to exit. */
const LOST_SHUTDOWN_MS = 15_000;

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.env.LOG_LEVEL, 'worker');
  if (!config.env.DATABASE_URL) {
    // The embedded store belongs to one process (`npm start`); a worker of its own shares
    // the API's balances only through PostgreSQL.
    throw new Error('A standalone worker settles task charges in the shared store: set DATABASE_URL (the embedded store serves `npm start` only).');
  }
  installTemporalRuntime(logger, true, config.env.TEMPORAL_METRICS_ADDRESS);
  const tracing = await startTracing(config.env, 'worker', logger);
  const lostAfterMs = config.env.TEMPORAL_LOST_EXIT_SECONDS * 1000;
  const db = await openStore(config);
  const metricsServer = config.env.METRICS_ADDRESS ? await startMetricsServer(config.env.METRICS_ADDRESS, logger) : undefined;
  const connection = await connectNative(config.temporalAddress, config.env.TEMPORAL_NAMESPACE, logger, lostAfterMs);
  const client = await Connection.connect({ address: config.temporalAddress });
  await ensureSearchAttributes(client, config.env.TEMPORAL_NAMESPACE, logger);
  await ensureRetention(client, config.env.TEMPORAL_NAMESPACE, config.env.TASK_RETENTION_DAYS, false, logger);
  await client.close();
  const worker = await createGatewayWorker(config, logger, connection, db, tracing);
  const running = worker.run();
  logger.info({ taskQueue: config.env.TEMPORAL_TASK_QUEUE }, 'worker running');
  // The SDK retries polls for ever: without this, a worker whose Temporal is gone for good
  // would wait unseen instead of exiting for its supervisor to notice and restart it.
  let lost: Error | undefined;
  const watchdog =
    lostAfterMs > 0
      ? watchReachability({
          check: async () => {
            await connection.withDeadline(Date.now() + 5000, () => connection.workflowService.getSystemInfo({}));
          },
          lostAfterMs,
          logger,
          onLost: (err) => {
            lost = err;
            logger.fatal({ err: err.message }, 'Temporal is gone; the worker stops and exits 1');
            if (worker.getState() === 'RUNNING') worker.shutdown();
            setTimeout(() => process.exit(1), LOST_SHUTDOWN_MS);
          },
        })
      : undefined;
  try {
    await running;
  } finally {
    watchdog?.stop();
  }
  if (lost) throw lost;
  await connection.close();
  await metricsServer?.close();
  await db.close();
  await tracing?.shutdown();
  logger.info('worker stopped');
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
