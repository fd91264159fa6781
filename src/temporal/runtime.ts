import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from 'pino';

let installed = false;

/**
 * Routes the SDK's own logs into pino (warnings and up) once per process, and, with
 * `metricsAddress` (TEMPORAL_METRICS_ADDRESS), has the SDK serve its worker metrics (task slots,
 * poll and schedule-to-start latencies, sticky cache) in Prometheus' format there: counters
 * with `_total` and durations in seconds, as the gateway's own metrics are named.
 */
export function installTemporalRuntime(logger: Logger, handleSignals: boolean, metricsAddress?: string): void {
  if (installed) return;
  installed = true;
  const sdkLog = logger.child({ component: 'temporal-sdk' });
  const levels: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
    TRACE: 'trace',
    DEBUG: 'debug',
    INFO: 'info',
    WARN: 'warn',
    ERROR: 'error',
  };
  Runtime.install({
    logger: new DefaultLogger('WARN', (entry) => sdkLog[levels[entry.level]](entry.meta ?? {}, entry.message)),
    shutdownSignals: handleSignals ? ['SIGINT', 'SIGTERM'] : [],
    ...(metricsAddress
      ? { telemetryOptions: { metrics: { prometheus: { bindAddress: metricsAddress, countersTotalSuffix: true, useSecondsForDurations: true } } } }
      : {}),
  });
  if (metricsAddress) logger.info({ url: `http://${metricsAddress}/metrics` }, 'Temporal SDK metrics listening');
}
