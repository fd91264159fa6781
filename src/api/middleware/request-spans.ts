/**
 * A server span per HTTP request (tracing on only: loaded by api/server.ts with `import()`).
 * Outermost, so everything the request does (the Temporal calls, the text proxy's upstream
 * attempts) runs inside its context and joins its trace; a W3C `traceparent` from the caller
 * makes it a child of the caller's span. It is named and labelled by the route pattern
 * (`POST /v1/video/create`, `GET /v1/videos/:id`), never the path with its ids, and records the
 * method, route, status and request id only: no header, key, body, prompt or query string
 * (signed file links carry their signature there). It ends when the response is done, a
 * stream's last byte included.
 */
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Middleware } from 'koa';
import { matchedRoute, type GatewayState } from '../context';

export function requestSpans(): Middleware<GatewayState> {
  const tracer = trace.getTracer('durable-model-gateway/http');
  return async (ctx, next) => {
    const parent = propagation.extract(ROOT_CONTEXT, ctx.headers);
    const span = tracer.startSpan(ctx.method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': ctx.method } }, parent);
    // For the access log's line: a request's log and its trace find each other.
    if (span.isRecording()) ctx.state.traceId = span.spanContext().traceId;
    ctx.res.once('close', () => {
      const route = matchedRoute(ctx);
      const status = ctx.res.statusCode;
      if (route) span.setAttribute('http.route', route).updateName(`${ctx.method} ${route}`);
      span.setAttribute('http.response.status_code', status);
      if (ctx.state.requestId) span.setAttribute('gateway.request_id', ctx.state.requestId);
      // A server span's 4xx is the client's doing, not a failure of the gateway.
      if (status >= 500) span.setAttribute('error.type', String(status)).setStatus({ code: SpanStatusCode.ERROR });
      // The client left before the answer was complete.
      if (!ctx.res.writableFinished) span.setAttribute('gateway.client_gone', true);
      span.end();
    });
    await context.with(trace.setSpan(parent, span), next);
  };
}
