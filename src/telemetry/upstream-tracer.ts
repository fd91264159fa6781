/**
 * Client spans for requests to upstream providers (installed into upstream-spans.ts when tracing
 * is on). A span is a child of whatever span is active where the request is made: the API
 * request's for text, the activity's for video. It records the channel and the outcome, and of
 * the URL only its origin and path: query strings carry keys and signatures (Gemini's
 * downloads, signed file links). Prompts and bodies are never recorded. No trace context is
 * sent upstream: a provider is a third party.
 */
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { UpstreamCall, UpstreamOutcome, UpstreamSpan, UpstreamTracer } from './upstream-spans';

/** The URL without credentials, query or fragment; undefined when it does not parse. */
export function urlWithoutSecrets(raw: string): { full: string; host: string; port: number } | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  return { full: `${url.origin}${url.pathname}`, host: url.hostname, port };
}

export function otelUpstreamTracer(): UpstreamTracer {
  const tracer = trace.getTracer('durable-model-gateway/upstream');
  return {
    start(call: UpstreamCall): UpstreamSpan {
      const url = urlWithoutSecrets(call.url);
      const span = tracer.startSpan(
        `${call.method} ${call.channel}`,
        {
          kind: SpanKind.CLIENT,
          attributes: {
            'http.request.method': call.method,
            'gateway.channel': call.channel,
            'gateway.upstream.kind': call.kind,
            ...(call.operation ? { 'gateway.upstream.operation': call.operation } : {}),
            ...(url ? { 'url.full': url.full, 'server.address': url.host, 'server.port': url.port } : {}),
          },
        },
        context.active(),
      );
      let ended = false;
      return {
        end(outcome: UpstreamOutcome): void {
          if (ended) return;
          ended = true;
          if (outcome.status !== undefined) span.setAttribute('http.response.status_code', outcome.status);
          // A client span's 4xx is an error too (the request did not do what it was for).
          const error = outcome.error ?? (outcome.status !== undefined && outcome.status >= 400 ? String(outcome.status) : undefined);
          if (error !== undefined) span.setAttribute('error.type', error).setStatus({ code: SpanStatusCode.ERROR, message: error });
          span.end();
        },
      };
    },
  };
}
