/**
 * Tracing for one process (docs/operations.md, "Tracing"): off unless an OTLP endpoint is
 * configured, and then set up once, here. This module imports no OpenTelemetry code (the type
 * imports below vanish at compile time): the SDK, the exporter and Temporal's interceptors are
 * loaded with `import()` only when tracing is on, so a gateway without an endpoint starts and
 * idles exactly as without tracing.
 */
import type { Resource } from '@opentelemetry/resources';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Logger } from 'pino';
import type { Env } from '../config/env';
import { installUpstreamTracer } from './upstream-spans';
import { tracingSettings, type TracedProcess } from './tracing-settings';

/** The longest a stopping process waits for its last spans to be exported. */
const SHUTDOWN_EXPORT_MS = 5000;

export interface ProcessTracing {
  serviceName: string;
  /** The batch processor every span of the process goes through, the workflow sink's included. */
  processor: SpanProcessor;
  resource: Resource;
  /** Exports what is still queued and stops; the last thing a process does before it exits. */
  shutdown(): Promise<void>;
}

/** Starts tracing for this process when it is configured; null (and nothing loaded) when not. */
export async function startTracing(env: Env, process: TracedProcess, logger: Logger): Promise<ProcessTracing | null> {
  const settings = tracingSettings(env, process);
  if (!settings) return null;
  const { startTracerProvider } = await import('./tracer-provider');
  const { otelUpstreamTracer, urlWithoutSecrets } = await import('./upstream-tracer');
  const tracing = startTracerProvider(settings, logger);
  installUpstreamTracer(otelUpstreamTracer());
  logger.info(
    {
      endpoint: urlWithoutSecrets(settings.url)?.full,
      serviceName: settings.serviceName,
      sampler: settings.sampler,
      headerNames: Object.keys(settings.headers),
    },
    'tracing on: spans are exported by OTLP/HTTP',
  );
  return {
    ...tracing,
    async shutdown() {
      installUpstreamTracer(null);
      // A collector that is down must not hold a stopping process past its grace period.
      let timer: NodeJS.Timeout | undefined;
      const gaveUp = new Promise<'gave up'>((resolve) => (timer = setTimeout(() => resolve('gave up'), SHUTDOWN_EXPORT_MS).unref()));
      const outcome = await Promise.race([tracing.shutdown().then(() => 'exported' as const), gaveUp]).catch((err: unknown) => {
        logger.warn({ err: (err as Error).message }, 'the last spans could not be exported');
        return 'failed' as const;
      });
      clearTimeout(timer);
      if (outcome === 'gave up') logger.warn({ waitedMs: SHUTDOWN_EXPORT_MS }, 'the last spans were not exported in time; stopping without them');
    },
  };
}
