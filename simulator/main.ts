/**
 * Standalone provider simulator: `npm run simulator` (or `node dist/simulator/main.js`).
 * Reads HOST, SIMULATOR_PORT, SIMULATOR_JOB_MS, SIMULATOR_FAULT_RATE, SIMULATOR_LATENCY_MS and
 * LOG_LEVEL, prints one JSON log line with its URL and stops cleanly on SIGINT/SIGTERM.
 */
import pino from 'pino';
import { ConfigError, loadConfig, type Config } from '../src/config/env';
import { startSimulator } from './server';

/** After this long, a stop that is still closing sockets exits anyway. */
const STOP_DEADLINE_MS = 5_000;

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      pino({ name: 'simulator' }).fatal(err.message);
      process.exitCode = 1;
      return;
    }
    throw err;
  }
  const { env } = config;
  const log = pino({ name: 'simulator', level: env.LOG_LEVEL });
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
  const stop = (reason: string): void => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(0), STOP_DEADLINE_MS).unref();
    sim.close().then(
      () => {
        log.info({ reason }, 'provider simulator stopped');
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'provider simulator failed to stop cleanly');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  // e.g. EADDRINUSE: report it as one log line instead of a stack dump.
  pino({ name: 'simulator' }).fatal({ err }, 'provider simulator failed to start');
  process.exit(1);
});
