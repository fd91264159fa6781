import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from 'pino';

let installed = false;

/** Routes the SDK's own logs into pino (warnings and up) once per process. */
export function installTemporalRuntime(logger: Logger, handleSignals: boolean): void {
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
  });
}
