import type { Env } from '../config/env';

/** Which gateway process exports: its default service name. */
export type TracedProcess = 'gateway' | 'api' | 'worker';

const DEFAULT_SERVICE_NAMES: Readonly<Record<TracedProcess, string>> = {
  gateway: 'durable-model-gateway',
  api: 'durable-model-gateway-api',
  worker: 'durable-model-gateway-worker',
};

/** OTEL_TRACES_SAMPLER, as the two parts its standard values combine. */
export interface SamplerSettings {
  /** A span whose caller (an incoming `traceparent`, a workflow's start) decided follows that decision. */
  parentBased: boolean;
  /** The share of new traces kept: 1 (always_on), 0 (always_off) or OTEL_TRACES_SAMPLER_ARG. */
  ratio: number;
}

export interface TracingSettings {
  /** Where spans are POSTed (OTLP/HTTP, JSON). */
  url: string;
  headers: Record<string, string>;
  serviceName: string;
  sampler: SamplerSettings;
}

/**
 * Whether this process traces, and how, from the standard OpenTelemetry variables: on when an
 * OTLP endpoint is set (and OTEL_SDK_DISABLED is not), null otherwise. The endpoint rules are
 * the specification's: the traces endpoint is used as it is, the general one gets `v1/traces`
 * appended to its path.
 */
export function tracingSettings(env: Env, process: TracedProcess): TracingSettings | null {
  if (env.OTEL_SDK_DISABLED) return null;
  const url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (env.OTEL_EXPORTER_OTLP_ENDPOINT && withTracesPath(env.OTEL_EXPORTER_OTLP_ENDPOINT));
  if (!url) return null;
  const sampler = env.OTEL_TRACES_SAMPLER;
  return {
    url,
    // The traces-only headers win over the general ones, name by name.
    headers: { ...env.OTEL_EXPORTER_OTLP_HEADERS, ...env.OTEL_EXPORTER_OTLP_TRACES_HEADERS },
    serviceName: env.OTEL_SERVICE_NAME ?? DEFAULT_SERVICE_NAMES[process],
    sampler: {
      parentBased: sampler.startsWith('parentbased_'),
      ratio: sampler.endsWith('always_on') ? 1 : sampler.endsWith('always_off') ? 0 : env.OTEL_TRACES_SAMPLER_ARG,
    },
  };
}

function withTracesPath(endpoint: string): string {
  const url = new URL(endpoint);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/traces`;
  return url.href;
}
