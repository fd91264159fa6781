/**
 * Standalone provider simulator: `npm run simulator` (or `node dist/src/simulator/main.js`).
 * Reads HOST, SIMULATOR_PORT, SIMULATOR_JOB_MS, SIMULATOR_FAULT_RATE and SIMULATOR_LATENCY_MS,
 * prints one JSON log line with its URL and stops cleanly on SIGINT/SIGTERM.
 */
import pino from 'pino';
import { ConfigError, loadConfig, type Config } from '../config/env';
import { startSimulator } from './server';

async function main(): Promise<void> {
  const log = pino({ name: 'simulator' });
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      log.fatal(err.message);
      process.exitCode = 1;
      return;
    }
    throw err;
  }
  const { env } = config;
  const sim = await startSimulator({
    host: env.HOST,
    port: env.SIMULATOR_PORT,
    jobMs: env.SIMULATOR_JOB_MS,
    faultRate: env.SIMULATOR_FAULT_RATE,
    latencyMs: env.SIMULATOR_LATENCY_MS,
  });
  log.info(
    { url: sim.url, jobMs: env.SIMULATOR_JOB_MS, faultRate: env.SIMULATOR_FAULT_RATE, latencyMs: env.SIMULATOR_LATENCY_MS },
    'provider simulator listening',
  );

  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    sim.close().then(
      () => {
        log.info({ signal }, 'provider simulator stopped');
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'provider simulator failed to stop cleanly');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: unknown) => {
  // e.g. EADDRINUSE: report it as one log line instead of a stack dump.
  pino({ name: 'simulator' }).fatal({ err }, 'provider simulator failed to start');
  process.exit(1);
});
