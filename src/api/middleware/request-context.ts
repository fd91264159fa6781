import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import type { GatewayState } from '../context';

/**
 * A request id (the caller's x-request-id when it is sane, else a new one) on the response
 * and on every log line; one access-log line per request with no query string, since
 * signed file links carry their signature there. With tracing on, the lines carry the
 * request's trace id too (set by request-spans.ts, which runs first).
 */
export function requestContext(logger: Logger): Middleware<GatewayState> {
  return async (ctx, next) => {
    const given = ctx.get('x-request-id');
    const requestId = /^[\w.:-]{1,128}$/.test(given) ? given : `req_${randomUUID().replace(/-/g, '')}`;
    const started = process.hrtime.bigint();
    ctx.state.requestId = requestId;
    ctx.state.receivedAt = started;
    ctx.state.log = logger.child(ctx.state.traceId ? { requestId, traceId: ctx.state.traceId } : { requestId });
    ctx.set('x-request-id', requestId);
    try {
      await next();
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      ctx.state.log.info({ method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(ms * 100) / 100, keyId: ctx.state.apiKey?.id }, 'request');
    }
  };
}
