import type { Middleware, ParameterizedContext } from 'koa';
import { matchedRoute, type GatewayState } from '../context';
import { metrics, secondsSince } from '../../metrics/metrics';

/** Who called: a key's class, the admin token, or nobody authenticated. */
function keyClassOf(ctx: ParameterizedContext<GatewayState>): string {
  const key = ctx.state.apiKey;
  if (key) return key.limited ? 'limited' : 'unlimited';
  return ctx.path.startsWith('/admin/') && ctx.status !== 401 ? 'admin' : 'none';
}

/** The gateway's error codes of its 429s, as the limit that refused. */
const LIMIT_OF_CODE: Readonly<Record<string, string>> = {
  too_many_streams: 'streams',
  too_many_tasks: 'tasks_in_flight',
  too_many_requests_in_flight: 'text_in_flight',
};

/** Which limit answered a 429: with no error of the gateway's own, it is a provider's 429 relayed. */
function limitOf(ctx: ParameterizedContext<GatewayState>): string {
  const code = ctx.state.errorCode;
  if (code === undefined) return 'upstream';
  // Both limits answer rate_limit_exceeded (the public code); only the per-address one comes before a key is known.
  if (code === 'rate_limit_exceeded') return ctx.state.apiKey ? 'requests_per_minute' : 'auth_failures';
  return LIMIT_OF_CODE[code] ?? code;
}

/**
 * Counts every answered request and times it to the moment its answer begins: outermost but for
 * the request context, so errors mapped inside are counted with their final status, and a 429
 * is counted by its error code.
 */
export function httpMetrics(): Middleware<GatewayState> {
  return async (ctx, next) => {
    try {
      await next();
    } finally {
      const route = matchedRoute(ctx) ?? 'unmatched';
      const status = ctx.status;
      metrics.httpRequests.inc({ method: ctx.method, route, status: String(status), key_class: keyClassOf(ctx) });
      metrics.httpDuration.observe({ method: ctx.method, route, status_class: `${Math.floor(status / 100)}xx` }, secondsSince(ctx.state.receivedAt));
      if (status === 429) metrics.rateLimitRefusals.inc({ limit: limitOf(ctx) });
    }
  };
}
