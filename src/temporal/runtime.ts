import { DefaultLogger, makeTelemetryFilterString, Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from 'pino';

let installed = false;
/** Set by stopQuietly(): the process stops without Temporal, whose absence the SDK goes on reporting. */
let stoppingWithoutTemporal = false;

/**
 * The process is stopping and Temporal (the embedded dev server, stopped by the same Ctrl-C) is
 * gone: what the SDK warns of from now on (retried calls, heartbeats that cannot be recorded) is
 * that absence, expected and harmless, so it is logged at info.
 */
export function stopQuietly(): void {
  stoppingWithoutTemporal = true;
}

const LEVELS: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/**
 * The pino level of an SDK log line. A worker's goodbye to the server (the ShutdownWorker call,
 * which only frees its sticky queue before the queue's own timeout) fails when the server is
 * stopping too, as with a terminal's Ctrl-C, which signals the embedded dev server in the same
 * process group: nothing is lost by it, so it is not a warning.
 */
export function sdkLevel(level: LogLevel, message: string): (typeof LEVELS)[LogLevel] {
  if (level === 'WARN' && (stoppingWithoutTemporal || message.startsWith('shutdown_worker rpc errored during worker shutdown'))) return 'info';
  return LEVELS[level];
}

/**
 * Routes the SDK's own logs into pino (warnings and up) once per process, the native core's
 * too (left to itself, the core writes its warnings to stderr as plain text, outside the JSON
 * log and its levels), and, with `metricsAddress` (TEMPORAL_METRICS_ADDRESS), has the SDK serve
 * its worker metrics (task slots, poll and schedule-to-start latencies, sticky cache) in
 * Prometheus' format there: counters with `_total` and durations in seconds, as the gateway's
 * own metrics are named.
 */
export function installTemporalRuntime(logger: Logger, handleSignals: boolean, metricsAddress?: string): void {
  if (installed) return;
  installed = true;
  const sdkLog = logger.child({ component: 'temporal-sdk' });
  Runtime.install({
    logger: new DefaultLogger('WARN', (entry) => sdkLog[sdkLevel(entry.level, entry.message)](entry.meta ?? {}, entry.message)),
    shutdownSignals: handleSignals ? ['SIGINT', 'SIGTERM'] : [],
    telemetryOptions: {
      logging: { filter: makeTelemetryFilterString({ core: 'WARN', other: 'WARN' }), forward: {} },
      ...(metricsAddress ? { metrics: { prometheus: { bindAddress: metricsAddress, countersTotalSuffix: true, useSecondsForDurations: true } } } : {}),
    },
  });
  if (metricsAddress) logger.info({ url: `http://${metricsAddress}/metrics` }, 'Temporal SDK metrics listening');
}
