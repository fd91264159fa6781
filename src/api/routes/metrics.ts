import Router from '@koa/router';
import { registry } from '../../metrics/metrics';
import type { GatewayState } from '../context';
import { GatewayError } from '../errors';
import { bearerToken } from '../middleware/auth';
import { guardedSecretCheck, secretMatcher } from '../middleware/admin-auth';

/**
 * GET /metrics in Prometheus' text format, for METRICS_TOKEN (a token that can read nothing
 * else, for the scraper's configuration) or the admin token; wrong tokens count against the
 * caller's address like wrong keys. A scraper that cannot send a token
 * reads the unauthenticated listener at METRICS_ADDRESS instead (metrics/metrics-server.ts).
 */
export function metricsRoutes(tokens: readonly string[]): Router<GatewayState> {
  const matches = secretMatcher(tokens);
  const router = new Router<GatewayState>();
  router.get('/metrics', async (ctx) => {
    if (!(await guardedSecretCheck(ctx, matches, bearerToken(ctx.get('authorization')) ?? ''))) {
      throw new GatewayError(
        401,
        'invalid_request_error',
        'GET /metrics needs Authorization: Bearer $METRICS_TOKEN (or the admin token).',
        null,
        'invalid_metrics_token',
      );
    }
    ctx.set('Cache-Control', 'no-store');
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  return router;
}
