/**
 * `npm start`: the embedded default in one process. Starts the Temporal dev server (unless
 * TEMPORAL_ADDRESS names a cluster), the provider simulator in this process (when no
 * provider credentials are configured), the worker and the API; prints how to try it; stops
 * all of it in order on SIGINT/SIGTERM. Starting again on the same DATA_DIR resumes the tasks
 * in flight.
 *
 * It supervises what it started: a dev server that dies is restarted on the same port and
 * SQLite file, and a worker that fails (or does not poll again after that restart) is
 * replaced, each under a RestartBudget; when a budget is spent the process stops everything
 * and exits 1, for the supervisor above it to restart the whole gateway.
 */
import { Connection } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import { loadChannels, simulatorUrl } from './config/channels';
import { loadConfig } from './config/env';
import { temporalCliPath } from './config/paths';
import { createLogger } from './log';
import { startApiServer } from './api/server';
import { startMetricsServer } from './metrics/metrics-server';
import { openStore } from './store/open';
import { superviseDevServer, type SupervisedDevServer } from './temporal/dev-server-supervisor';
import { ensureRetention } from './temporal/namespace-retention';
import { taskQueuePollers } from './temporal/pollers';
import { ensureSearchAttributes } from './temporal/register-search-attributes';
import { MAX_RESTART_DELAY_MS, type RestartPolicy } from './temporal/restart-budget';
import { installTemporalRuntime, stopQuietly } from './temporal/runtime';
import { startTracing, type ProcessTracing } from './telemetry/tracing';
import { WorkerSupervisor } from './temporal/worker-supervisor';
import { connectNative, createGatewayWorker } from './worker';

type Stop = () => Promise<void>;

/** Stopping (the worker's grace, the dev server's) may take this long; then the process exits anyway. */
const STOP_DEADLINE_MS = 60_000;

async function main(): Promise<void> {
  const config = loadConfig();
  const env = config.env;
  const logger = createLogger(env.LOG_LEVEL);
  installTemporalRuntime(logger, false, env.TEMPORAL_METRICS_ADDRESS);
  const stops: Stop[] = [];
  let devServer: SupervisedDevServer | undefined;
  let stopping = false;
  const stopAll = async (code: number) => {
    if (stopping) return;
    stopping = true;
    logger.info({ exitCode: code }, 'stopping');
    // Before the ordered stops: with a terminal's Ctrl-C the dev server got SIGINT too, and its
    // exit before its turn below is part of this stop, not a crash to restart it from.
    devServer?.expectExit();
    // A stop that waits on something gone (a worker draining towards an absent Temporal)
    // must not keep a process that should exit from exiting.
    setTimeout(() => {
      logger.error({ exitCode: code }, 'stopping took too long; exiting now');
      process.exit(code);
    }, STOP_DEADLINE_MS);
    for (const stop of stops.reverse()) {
      await stop().catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'error while stopping'));
    }
    logger.info({ exitCode: code }, 'stopped');
    process.exit(code);
  };
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));

  const policy: RestartPolicy = {
    initialDelayMs: env.SUPERVISOR_RESTART_BACKOFF_MS,
    maxDelayMs: MAX_RESTART_DELAY_MS,
    maxRestarts: env.SUPERVISOR_RESTART_MAX,
    windowMs: env.SUPERVISOR_RESTART_WINDOW_SECONDS * 1000,
  };
  const giveUp = (err: Error) => {
    logger.fatal({ err: err.message }, 'giving up: stopping and exiting 1 for the process supervisor to restart the gateway');
    void stopAll(1);
  };
  let workers: WorkerSupervisor<Worker> | undefined;
  let tracing: ProcessTracing | null = null;

  try {
    // First in, so last out: spans of everything stopped before it are still exported.
    tracing = await startTracing(env, 'gateway', logger);
    if (tracing) stops.push(tracing.shutdown);
    let uiUrl: string | undefined;
    if (config.embeddedTemporal) {
      const server = await superviseDevServer({
        cliPath: temporalCliPath(env.TEMPORAL_CLI_PATH),
        dataDir: config.dataDir,
        port: env.TEMPORAL_DEV_PORT,
        uiPort: env.TEMPORAL_UI_PORT,
        metricsPort: env.TEMPORAL_DEV_METRICS_PORT,
        namespace: env.TEMPORAL_NAMESPACE,
        logger,
        policy,
        onRestarted: () => void workers?.verifyPolling(),
        onGiveUp: giveUp,
        hungAfterMs: env.SUPERVISOR_HUNG_SECONDS * 1000,
      });
      devServer = server;
      stops.push(server.stop);
      uiUrl = server.uiUrl;
    }

    const channels = loadChannels(config);
    if (channels.some((c) => c.simulated) && !env.SIMULATOR_URL) {
      // The demo upstream runs in this process: as a Node process of its own it cost an idle
      // tree ~55 MiB of RSS (a second copy of Node's code and heap) for a handful of routes.
      // Loaded on demand, so a gateway in front of real providers never loads it.
      // The channels point at SIMULATOR_PORT, so it cannot be a random one here.
      if (env.SIMULATOR_PORT === 0) throw new Error('SIMULATOR_PORT=0 (a random port) is for the standalone simulator; npm start needs a fixed one');
      const { startSimulator } = await import('../simulator/server');
      const sim = await startSimulator({
        host: '127.0.0.1',
        port: env.SIMULATOR_PORT,
        jobMs: env.SIMULATOR_JOB_MS,
        faultRate: env.SIMULATOR_FAULT_RATE,
        latencyMs: env.SIMULATOR_LATENCY_MS,
      });
      stops.push(() => sim.close());
      logger.info({ url: sim.url, jobMs: env.SIMULATOR_JOB_MS }, 'provider simulator started (no provider credentials configured)');
    }

    const db = await openStore(config);
    stops.push(() => db.close());

    if (env.METRICS_ADDRESS) {
      const metricsServer = await startMetricsServer(env.METRICS_ADDRESS, logger);
      stops.push(metricsServer.close);
    }

    const clientConnection = await Connection.connect({ address: config.temporalAddress });
    stops.push(() => clientConnection.close());
    if (!config.embeddedTemporal) await ensureSearchAttributes(clientConnection, env.TEMPORAL_NAMESPACE, logger);
    await ensureRetention(clientConnection, env.TEMPORAL_NAMESPACE, env.TASK_RETENTION_DAYS, config.embeddedTemporal, logger);

    const nativeConnection = await connectNative(config.temporalAddress, env.TEMPORAL_NAMESPACE, logger);
    const supervisor = new WorkerSupervisor<Worker>({
      create: () => createGatewayWorker(config, logger, nativeConnection, db, tracing),
      // Seen by the server on both halves of the queue: workflow tasks and activity tasks.
      isPolling: async (identity, sinceMs) => {
        for (const type of ['workflow', 'activity'] as const) {
          const pollers = await taskQueuePollers(clientConnection, env.TEMPORAL_NAMESPACE, env.TEMPORAL_TASK_QUEUE, type);
          if (!pollers.some((p) => p.identity === identity && p.lastAccessMs >= sinceMs)) return false;
        }
        return true;
      },
      policy,
      logger,
      onGiveUp: giveUp,
    });
    workers = supervisor;
    await supervisor.start();
    stops.push(async () => {
      // A terminal's Ctrl-C stops the embedded dev server with this process: a worker draining
      // towards it would wait out its grace and the core's retries of calls that cannot land.
      // Its steps in flight are not lost: Temporal retries them once it is back (their heartbeat
      // timeout), on this DATA_DIR's next start.
      const drained = await Promise.race([
        supervisor.stop().then(() => true),
        devServer?.goneWhileStopping.then(() => false) ?? new Promise<never>(() => undefined),
      ]);
      if (!drained) {
        logger.info('the temporal dev server has stopped: the worker is not drained, its steps in flight resume at the next start');
        stopQuietly();
        return;
      }
      await nativeConnection.close();
    });

    const api = await startApiServer({
      config,
      logger,
      db,
      connection: clientConnection,
      localWorkerRunning: () => supervisor.running(),
      // The supervisor's workers all run on this one connection, so it outlives any of them.
      ...(env.TEMPORAL_EAGER_START ? { localWorkerConnection: nativeConnection } : {}),
      tracing,
    });
    stops.push(api.close);

    const demoKey = (await api.keys.count()) === 0 ? await api.keys.issue('demo') : undefined;
    printBanner({
      apiUrl: config.publicBaseUrl,
      uiUrl,
      adminToken: api.adminToken.created ? api.adminToken.value : undefined,
      demoKey: demoKey?.key,
      simulator: channels.some((c) => c.simulated) ? simulatorUrl(config) : undefined,
    });
  } catch (err) {
    logger.fatal({ err: (err as Error).message }, 'start-up failed');
    await stopAll(1);
  }
}

function printBanner(info: { apiUrl: string; uiUrl?: string; adminToken?: string; demoKey?: string; simulator?: string }): void {
  const key = info.demoKey ?? '<API_KEY>';
  const lines = [
    '',
    `  Gateway API        ${info.apiUrl}`,
    `  Console            ${info.apiUrl}/console`,
    info.uiUrl ? `  Temporal Web UI    ${info.uiUrl}` : '',
    info.simulator
      ? `  Upstream           provider simulator at ${info.simulator} (set ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY, OPENAI_VIDEOS_* or CHANNELS_FILE for real providers)`
      : '',
    info.adminToken ? `  Admin token        ${info.adminToken}   (generated; kept in DATA_DIR/admin-token)` : '',
    info.demoKey
      ? `  Demo API key       ${info.demoKey}   (shown once; only its hash is stored)`
      : '  API keys           create one: curl -X POST -H "Authorization: Bearer $ADMIN_TOKEN" -H "Content-Type: application/json" -d \'{"name":"me"}\' ' +
        `${info.apiUrl}/admin/keys`,
    '',
    '  Try it:',
    `    curl -s ${info.apiUrl}/v1/video/create -H "Authorization: Bearer ${key}" -H "Content-Type: application/json" \\`,
    `      -d '{"model":"vidgen3","prompt":"a red fox running through snow","aspect_ratio":"16:9"}'`,
    `    curl -s "${info.apiUrl}/v1/video/query?id=<id from above>" -H "Authorization: Bearer ${key}"`,
    '    # poll until "status":"completed", then open video_url in a browser or: curl -o video.mp4 "<video_url>"',
    `    curl -s ${info.apiUrl}/v1/messages -H "x-api-key: ${key}" -H "Content-Type: application/json" \\`,
    `      -d '{"model":"cm-sonnet-4.5","max_tokens":256,"messages":[{"role":"user","content":"Hello"}]}'`,
    '',
  ];
  process.stdout.write(lines.filter((l, i, all) => l !== '' || all[i - 1] !== '').join('\n') + '\n');
}

void main();
