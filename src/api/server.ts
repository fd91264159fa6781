/**
 * The API process: `npm run api` starts it alone against TEMPORAL_ADDRESS (scale-out);
 * `npm start` runs it inside the embedded process.
 */
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { Connection, type ConnectionLike } from '@temporalio/client';
import type { Logger } from 'pino';
import { loadChannels, isTextChannel, isVideoChannel } from '../config/channels';
import { ChannelHealth } from '../proxy/channel-health';
import { UsageRecorder } from '../billing/usage';
import { loadPrices } from '../billing/price-config';
import { createRateLimiter } from '../limits/create-rate-limiter';
import { BillingStore } from '../billing/ledger';
import { TextHolds } from '../billing/text-holds';
import { TextLeases } from '../billing/text-leases';
import { IdempotencyStore } from '../store/idempotency';
import { startBillingReconciler } from '../billing/reconciler';
import { StartConfirmations } from '../tasks/start-confirmations';
import { PaidTasks } from '../tasks/paid-tasks';
import { loadConfig, type Config } from '../config/env';
import { createLogger } from '../log';
import { setMetricSources } from '../metrics/metrics';
import { startMetricsServer } from '../metrics/metrics-server';
import { BlobStore } from '../files/blob-store';
import { persistentSecret } from '../config/secrets';
import { UrlSigner } from '../files/signed-url';
import type { Db } from '../store/db';
import { KeyStore } from '../store/keys';
import { closeStalledReaders } from './stalled-readers';
import { ConsoleSessions } from '../store/console-sessions';
import { openStore } from '../store/open';
import { ensureSearchAttributes } from '../temporal/register-search-attributes';
import { CharacterViews } from '../tasks/character-views';
import { CharacterService } from '../tasks/character-service';
import { TaskService } from '../tasks/task-service';
import { TaskViews } from '../tasks/task-views';
import { createApp } from './app';
import { createHealthProbe } from './health';
import { startTracing, type ProcessTracing } from '../telemetry/tracing';
import { PerKeySlots } from '../limits/per-key-slots';
import { ResponseStore } from '../store/responses';
import { SettlementJournal } from '../billing/settlement-journal';
import { BackgroundResponseService } from '../responses/background-service';

/** Started tasks are told to the store at most this far apart (one statement per batch). */
const START_CONFIRMATION_FLUSH_MS = 1000;

export interface ApiServer {
  url: string;
  keys: KeyStore;
  adminToken: { value: string; created: boolean };
  close(): Promise<void>;
}

export async function startApiServer(opts: {
  config: Config;
  logger: Logger;
  db: Db;
  connection: Connection;
  localWorkerRunning?: () => boolean;
  /** The NativeConnection of the worker in this process (`npm start`): runs start on it eagerly (TaskService). */
  localWorkerConnection?: ConnectionLike;
  /** The process's tracing (telemetry/tracing.ts); null or absent = off. */
  tracing?: ProcessTracing | null;
}): Promise<ApiServer> {
  const { config, logger, db, connection } = opts;
  const env = config.env;
  // Loaded only with tracing on: without it no OpenTelemetry module is ever required.
  const traced = opts.tracing ? { temporal: await import('../telemetry/temporal-tracing'), http: await import('./middleware/request-spans') } : null;
  const keys = new KeyStore(db);
  await keys.start();
  const adminToken = persistentSecret(config.dataDir, 'admin-token', env.ADMIN_TOKEN);
  const signingSecret = persistentSecret(config.dataDir, 'url-signing-secret', env.URL_SIGNING_SECRET);
  const views = new TaskViews(db, env.TASK_RETENTION_DAYS);
  const tasks = new TaskService(
    connection,
    {
      namespace: env.TEMPORAL_NAMESPACE,
      taskQueue: env.TEMPORAL_TASK_QUEUE,
      rpcTimeoutMs: env.TEMPORAL_RPC_TIMEOUT_MS,
      firstTryMaxWaitMs: env.SUBMIT_FIRST_TRY_MAX_WAIT_MS,
      interceptors: traced?.temporal.tracingClientInterceptors(),
      ...(opts.localWorkerConnection ? { localWorker: opts.localWorkerConnection } : {}),
    },
    views,
  );
  const characterCreateTimeoutMs = 120_000;
  const characterViews = new CharacterViews(db, env.TASK_RETENTION_DAYS);
  const characters = new CharacterService(tasks.client, characterViews, {
    taskQueue: env.TEMPORAL_TASK_QUEUE,
    rpcTimeoutMs: env.TEMPORAL_RPC_TIMEOUT_MS,
    createTimeoutMs: characterCreateTimeoutMs,
  });
  const channels = loadChannels(config);
  const prices = loadPrices(env.PRICES_FILE);
  const billing = new BillingStore(db);
  const holds = new TextHolds(db, env.TEXT_MAX_IN_FLIGHT_PER_KEY, logger, env.TEXT_HOLD_ORPHAN_SECONDS);
  const journal = new SettlementJournal(path.join(config.dataDir, 'text-usage'), holds.instanceId, { syncWaitMs: env.TEXT_JOURNAL_SYNC_WAIT_MS });
  // The embedded store has one owner process: it takes text holds from leases, with no statement
  // per request. PostgreSQL replicas share keys, and hold each request in a row.
  const leases = db.kind === 'embedded' ? new TextLeases(db, journal, holds.instanceId, env.TEXT_MAX_IN_FLIGHT_PER_KEY, logger) : null;
  const usage = new UsageRecorder(db, logger, prices, { journal, flushMs: env.TEXT_USAGE_FLUSH_MS, leases, owner: holds.instanceId });
  // What stopped processes journaled is written before their holds and leases are declared
  // orphaned (answered requests at their price, the others in full).
  await holds.start((live) => usage.recover(live));
  leases?.start();
  const idempotency = new IdempotencyStore(db);
  idempotency.start();
  const limiter = createRateLimiter(env.REDIS_URL, logger);
  const starts = new StartConfirmations(billing, START_CONFIRMATION_FLUSH_MS, logger);
  const reconciler = startBillingReconciler(
    billing,
    tasks,
    // Character views are final (nothing to forget) and pruned with the task views.
    { forget: (taskIds) => views.forget(taskIds), prune: async () => (await views.prune()) + (await characterViews.prune()) },
    // A start whose RPC deadline passed can no longer land: twice the deadline plus a margin.
    {
      intervalSeconds: env.BILLING_RECONCILE_SECONDS,
      sweepSeconds: env.TASK_STOP_SWEEP_SECONDS,
      minAgeSeconds: Math.ceil((2 * env.TEMPORAL_RPC_TIMEOUT_MS) / 1000) + 10,
    },
    logger,
  );
  const consoleSessions = new ConsoleSessions(db, { idleMinutes: env.CONSOLE_SESSION_IDLE_MINUTES, maxHours: env.CONSOLE_SESSION_MAX_HOURS });
  consoleSessions.start();
  const channelHealth = new ChannelHealth(env.CHANNEL_FAILURE_THRESHOLD, env.CHANNEL_COOLDOWN_SECONDS * 1000);
  const textChannels = channels.filter(isTextChannel);
  const responses = new ResponseStore(db);
  const paid = new PaidTasks(
    tasks,
    characters,
    billing,
    prices,
    starts,
    logger,
    usage,
    // A charge taken ahead of a character waits for the character, then for the task's start.
    Math.ceil((characterCreateTimeoutMs + 4 * env.TEMPORAL_RPC_TIMEOUT_MS) / 1000) + 60,
  );
  setMetricSources({
    store: () => billing.inFlightFigures(),
    restingChannels: () => channelHealth.resting(textChannels),
    usagePending: () => usage.pending(),
  });
  const app = createApp({
    db,
    billing,
    holds: leases ?? holds,
    idempotency,
    streams: new PerKeySlots(env.MAX_STREAMS_PER_KEY),
    prices,
    limiter,
    paid,
    config,
    characters,
    channels: channels.filter(isVideoChannel),
    textChannels,
    channelHealth,
    usage,
    textLimits: {
      timeoutMs: env.TEXT_TIMEOUT_MS,
      idleMs: env.TEXT_STREAM_IDLE_MS,
      defaultMaxTokens: env.TEXT_DEFAULT_MAX_TOKENS,
      settleWaitMs: env.TEXT_SETTLE_WAIT_MS,
    },
    logger,
    keys,
    tasks,
    blobs: new BlobStore(config.storageDir),
    signer: new UrlSigner(signingSecret.value, config.publicBaseUrl, env.VIDEO_URL_TTL_SECONDS),
    adminToken: adminToken.value,
    health: createHealthProbe({
      connection,
      namespace: env.TEMPORAL_NAMESPACE,
      taskQueue: env.TEMPORAL_TASK_QUEUE,
      localWorkerRunning: opts.localWorkerRunning,
    }),
    requestSpans: traced?.http.requestSpans(),
    consoleSessions,
    responses,
    backgroundResponses: new BackgroundResponseService({
      tasks,
      paid,
      store: responses,
      prices,
      defaultMaxTokens: env.TEXT_DEFAULT_MAX_TOKENS,
      deadlineMs: env.TASK_DEADLINE_MINUTES * 60_000,
      retryInitialMs: env.UPSTREAM_RETRY_INITIAL_MS,
      retryMaxMs: env.UPSTREAM_RETRY_MAX_MS,
    }),
    // Built beside the compiled code: dist/src/api/server.js -> dist/console.
    consoleDir: path.resolve(__dirname, '..', '..', 'console'),
  });
  const server = createHttpServer(app.callback(), env, logger);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(env.PORT, env.HOST, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const url = `http://${env.HOST === '0.0.0.0' ? '127.0.0.1' : env.HOST}:${address.port}`;
  logger.info({ url, publicBaseUrl: config.publicBaseUrl }, 'api listening');
  return {
    url,
    keys,
    adminToken,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 5000).unref();
      });
      reconciler.stop();
      idempotency.stop();
      consoleSessions.stop();
      await starts.close();
      leases?.stop();
      await usage.close();
      await holds.retire().catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'could not retire this process from the text holds'));
      await limiter.close();
    },
  };
}

/** Checks of the header and request deadlines run this often (Node's default is 30 s, which lets a slow client keep its socket that much longer). */
const CONNECTION_CHECK_MS = 1000;
/** A flood of refused connections logs one line per this many milliseconds. */
const DROP_LOG_EVERY_MS = 10_000;

/**
 * The HTTP server's own limits, so that slow or idle clients cannot hold sockets: headers
 * within HTTP_HEADERS_TIMEOUT_MS (a slowloris client gets 408 and is closed), the whole
 * request within HTTP_REQUEST_TIMEOUT_MS (the deadline covers receiving the request only,
 * never the answer, so a long stream is not cut), idle keep-alive sockets closed after
 * HTTP_KEEPALIVE_TIMEOUT_MS, an answer nobody reads closed after HTTP_SEND_STALL_MS (stalled-readers.ts),
 * headers at most HTTP_MAX_HEADER_BYTES (431), and at most HTTP_MAX_CONNECTIONS sockets: one more
 * is closed at accept, without touching the others.
 */
export function createHttpServer(handler: http.RequestListener, env: Config['env'], logger: Logger): http.Server {
  const server = http.createServer(
    {
      requestTimeout: env.HTTP_REQUEST_TIMEOUT_MS,
      // Node refuses a header deadline longer than the request's.
      headersTimeout: Math.min(env.HTTP_HEADERS_TIMEOUT_MS, env.HTTP_REQUEST_TIMEOUT_MS),
      keepAliveTimeout: env.HTTP_KEEPALIVE_TIMEOUT_MS,
      maxHeaderSize: env.HTTP_MAX_HEADER_BYTES,
      connectionsCheckingInterval: CONNECTION_CHECK_MS,
    },
    handler,
  );
  server.maxConnections = env.HTTP_MAX_CONNECTIONS;
  closeStalledReaders(server, env.HTTP_SEND_STALL_MS, logger);
  let dropped = 0;
  let lastLog = -Infinity;
  server.on('drop', () => {
    dropped++;
    const now = Date.now();
    if (now - lastLog < DROP_LOG_EVERY_MS) return;
    lastLog = now;
    logger.warn({ dropped, maxConnections: env.HTTP_MAX_CONNECTIONS }, 'connections refused: HTTP_MAX_CONNECTIONS reached');
    dropped = 0;
  });
  return server;
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.env.LOG_LEVEL, 'api');
  const tracing = await startTracing(config.env, 'api', logger);
  const db = await openStore(config);
  // Lazy: the API starts (and answers 503 with a reason) even while Temporal is down.
  const connection = Connection.lazy({ address: config.temporalAddress });
  ensureSearchAttributes(connection, config.env.TEMPORAL_NAMESPACE, logger).catch((err) =>
    logger.warn({ err: (err as Error).message }, 'could not check search attributes (will work once Temporal is reachable)'),
  );
  const metricsServer = config.env.METRICS_ADDRESS ? await startMetricsServer(config.env.METRICS_ADDRESS, logger) : undefined;
  const api = await startApiServer({ config, logger, db, connection, tracing });
  if (api.adminToken.created) logger.warn({ file: `${config.dataDir}/admin-token` }, 'generated an admin token (set ADMIN_TOKEN to choose one)');
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await api.close();
    await metricsServer?.close();
    await connection.close();
    await db.close();
    await tracing?.shutdown();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
