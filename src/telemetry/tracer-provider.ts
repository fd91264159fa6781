/**
 * The process's OpenTelemetry tracer provider: spans sampled by OTEL_TRACES_SAMPLER, batched,
 * and POSTed as OTLP/HTTP JSON to the configured endpoint. Loaded by telemetry/tracing.ts only
 * when tracing is on, so a gateway without an endpoint never loads this module or the SDK.
 */
import { diag, DiagLogLevel, type DiagLogger } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { Logger } from 'pino';
import type { SamplerSettings, TracingSettings } from './tracing-settings';
import type { ProcessTracing } from './tracing';

/** The SDK's own complaints (an export that failed, a full queue) reach the log this often at most. */
const DIAG_LOG_EVERY_MS = 60_000;

function samplerOf(settings: SamplerSettings): Sampler {
  const root = settings.ratio >= 1 ? new AlwaysOnSampler() : settings.ratio <= 0 ? new AlwaysOffSampler() : new TraceIdRatioBasedSampler(settings.ratio);
  return settings.parentBased ? new ParentBasedSampler({ root }) : root;
}

/**
 * A collector that is down must not flood the log: the batch processor retries every few
 * seconds, and each failure would be a line. The first is logged, then one per minute with the
 * count of those left out.
 */
function throttledDiag(logger: Logger): DiagLogger {
  let last = -Infinity;
  let skipped = 0;
  const forward =
    (level: 'warn' | 'error') =>
    (message: string, ...args: unknown[]) => {
      const now = Date.now();
      if (now - last < DIAG_LOG_EVERY_MS) {
        skipped++;
        return;
      }
      last = now;
      const detail = args.map((a) => (a instanceof Error ? a.message : typeof a === 'string' ? a : '')).filter((a) => a !== '');
      logger[level]({ component: 'opentelemetry', detail: detail.join('; ') || undefined, skipped: skipped || undefined }, message);
      skipped = 0;
    };
  const ignore = () => undefined;
  return { error: forward('error'), warn: forward('warn'), info: ignore, debug: ignore, verbose: ignore };
}

export function startTracerProvider(settings: TracingSettings, logger: Logger): ProcessTracing {
  diag.setLogger(throttledDiag(logger), { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
  const resource = new Resource({ 'service.name': settings.serviceName });
  // The batch processor's queue is bounded (2048 spans): with the collector away, spans beyond it
  // are dropped rather than held, so a lost collector costs no memory growth.
  const processor = new BatchSpanProcessor(new OTLPTraceExporter({ url: settings.url, headers: settings.headers }));
  const provider = new NodeTracerProvider({ resource, sampler: samplerOf(settings.sampler), spanProcessors: [processor] });
  // W3C trace context only: a client's `baggage` header is not carried into workflow and
  // activity headers (it is arbitrary client data, and would grow every history event).
  provider.register({ propagator: new W3CTraceContextPropagator() });
  return {
    serviceName: settings.serviceName,
    processor,
    resource,
    shutdown: () => provider.shutdown(),
  };
}
