/**
 * `npm start`: the embedded default in one process. Starts the Temporal dev server (unless
 * TEMPORAL_ADDRESS names a cluster), the provider simulator (when no provider credentials
 * are configured), the worker and the API; prints how to try it; stops all of it in order
 * on SIGINT/SIGTERM. Starting again on the same DATA_DIR resumes the tasks in flight.
 */
import { Connection } from '@temporalio/client';
import { loadChannels, simulatorUrl } from './config/channels';
import { loadConfig } from './config/env';
import { temporalCliPath } from './config/paths';
import { createLogger } from './log';
import { startApiServer } from './api/server';
import { startSimulator } from './simulator/server';
import { openStore } from './store/open';
import { startDevServer } from './temporal/dev-server';
import { ensureRetention } from './temporal/namespace-retention';
import { ensureSearchAttributes } from './temporal/register-search-attributes';
import { installTemporalRuntime } from './temporal/runtime';
import { connectNative, createGatewayWorker } from './worker';

type Stop = () => Promise<void>;

async function main(): Promise<void> {
  const config = loadConfig();
  const env = config.env;
  const logger = createLogger(env.LOG_LEVEL);
  installTemporalRuntime(logger, false);
  const stops: Stop[] = [];
  let stopping = false;
  const stopAll = async (code: number) => {
    if (stopping) return;
    stopping = true;
    logger.info('stopping');
    for (const stop of stops.reverse()) {
      await stop().catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'error while stopping'));
    }
    logger.info('stopped');
    process.exit(code);
  };
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));

  try {
    let uiUrl: string | undefined;
    if (config.embeddedTemporal) {
      const server = await startDevServer({
        cliPath: temporalCliPath(env.TEMPORAL_CLI_PATH),
        dataDir: config.dataDir,
        port: env.TEMPORAL_DEV_PORT,
        uiPort: env.TEMPORAL_UI_PORT,
        namespace: env.TEMPORAL_NAMESPACE,
        logger,
      });
      stops.push(server.stop);
      uiUrl = server.uiUrl;
    }

    const channels = loadChannels(config);
    if (channels.some((c) => c.simulated) && !env.SIMULATOR_URL) {
      const sim = await startSimulator({
        port: env.SIMULATOR_PORT,
        host: '127.0.0.1',
        jobMs: env.SIMULATOR_JOB_MS,
        faultRate: env.SIMULATOR_FAULT_RATE,
        latencyMs: env.SIMULATOR_LATENCY_MS,
      });
      stops.push(sim.close);
      logger.info({ url: sim.url, jobMs: env.SIMULATOR_JOB_MS }, 'provider simulator started (no provider credentials configured)');
    }

    const db = await openStore(config);
    stops.push(() => db.close());

    const clientConnection = await Connection.connect({ address: config.temporalAddress });
    stops.push(() => clientConnection.close());
    if (!config.embeddedTemporal) await ensureSearchAttributes(clientConnection, env.TEMPORAL_NAMESPACE, logger);
    await ensureRetention(clientConnection, env.TEMPORAL_NAMESPACE, env.TASK_RETENTION_DAYS, config.embeddedTemporal, logger);

    const nativeConnection = await connectNative(config.temporalAddress, env.TEMPORAL_NAMESPACE, logger);
    const worker = await createGatewayWorker(config, logger, nativeConnection, db);
    const workerRun = worker.run();
    workerRun.catch((err: unknown) => {
      logger.fatal({ err: (err as Error).message }, 'worker failed');
      void stopAll(1);
    });
    stops.push(async () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await workerRun.catch(() => undefined);
      await nativeConnection.close();
    });

    const api = await startApiServer({
      config,
      logger,
      db,
      connection: clientConnection,
      localWorkerRunning: () => worker.getState() === 'RUNNING',
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
    info.uiUrl ? `  Temporal Web UI    ${info.uiUrl}` : '',
    info.simulator ? `  Upstream           provider simulator at ${info.simulator} (set ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY, OPENAI_VIDEOS_* or CHANNELS_FILE for real providers)` : '',
    info.adminToken ? `  Admin token        ${info.adminToken}   (generated; kept in DATA_DIR/admin-token)` : '',
    info.demoKey
      ? `  Demo API key       ${info.demoKey}   (shown once; only its hash is stored)`
      : '  API keys           create one: curl -X POST -H "Authorization: Bearer $ADMIN_TOKEN" -H "Content-Type: application/json" -d \'{"name":"me"}\' ' + `${info.apiUrl}/admin/keys`,
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
