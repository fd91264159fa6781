/**
 * The seam between the upstream HTTP clients (providers/http.ts, providers/text-http.ts) and
 * tracing. It imports no OpenTelemetry code: with tracing off no tracer is ever installed, and a
 * call costs one null check; with tracing on, telemetry/upstream-tracer.ts installs one at start.
 */

/** One request to an upstream provider, as a span records it. */
export interface UpstreamCall {
  kind: 'text' | 'video';
  /** The channel's name (a bounded set, from the channels configuration). */
  channel: string;
  method: string;
  /** The request's URL; the span keeps its origin and path only (queries carry signatures and keys). */
  url: string;
  /** What the call is for (`veo submit`, `videos poll`), video calls only. */
  operation?: string;
}

/**
 * How an upstream request ended: the HTTP status of its answer, the error when none came, or
 * both when an answer began and broke off (a stream cut, or given up when its client left).
 */
export interface UpstreamOutcome {
  status?: number;
  error?: string;
}

export interface UpstreamSpan {
  /** Records the outcome and ends the span; later calls do nothing. */
  end(outcome: UpstreamOutcome): void;
}

export interface UpstreamTracer {
  /** A span that is a child of the caller's active span (the request's, the activity's). */
  start(call: UpstreamCall): UpstreamSpan;
}

let installed: UpstreamTracer | null = null;

export function installUpstreamTracer(tracer: UpstreamTracer | null): void {
  installed = tracer;
}

/** A span for this upstream call, or null when tracing is off. */
export function startUpstreamSpan(call: UpstreamCall): UpstreamSpan | null {
  return installed === null ? null : installed.start(call);
}
