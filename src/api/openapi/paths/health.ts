import { METRICS, OPEN } from '../security';
import { errors, json } from '../responses';
import type { RouteDoc } from '../types';

/** The probes and this document: no key. */
export function healthRoutes(): RouteDoc[] {
  return [
    {
      method: 'get',
      path: '/livez',
      operation: {
        operationId: 'livez',
        summary: 'Liveness: the process answers',
        description: 'Touches nothing else, so a slow store or an absent Temporal never gets a live process killed.',
        tags: ['Health'],
        security: OPEN,
        responses: { '200': json('Alive.', 'Liveness') },
      },
    },
    {
      method: 'get',
      path: '/readyz',
      operation: {
        operationId: 'readyz',
        summary: 'Readiness: the store answers',
        description: "Ready when the store answers `select 1` within 2 s. Temporal's and the worker's state are reported but do not make the process unready.",
        tags: ['Health'],
        security: OPEN,
        responses: { '200': json('Ready.', 'Readiness'), '503': json('Not ready: the store does not answer.', 'Readiness') },
      },
    },
    {
      method: 'get',
      path: '/healthz',
      operation: {
        operationId: 'healthz',
        summary: 'The whole gateway works: Temporal answers and a worker polls',
        tags: ['Health'],
        security: OPEN,
        responses: { '200': json('Healthy.', 'HealthReport'), '503': json('Temporal unreachable or no worker polling.', 'HealthReport') },
      },
    },
    {
      method: 'get',
      path: '/metrics',
      operation: {
        operationId: 'getMetrics',
        summary: "This process's Prometheus metrics",
        description:
          'The text exposition format (docs/operations.md, "Metrics", lists every metric). A scraper that cannot send a token reads the listener at METRICS_ADDRESS instead.',
        tags: ['Health'],
        security: METRICS,
        responses: {
          '200': { description: 'The metrics.', content: { 'text/plain; version=0.0.4; charset=utf-8': { schema: { type: 'string' } } } },
          ...errors({
            401: 'Neither METRICS_TOKEN nor the admin token (`invalid_metrics_token`).',
            429: 'Too many failed authentications from this address (`rate_limit_exceeded`).',
          }),
        },
      },
    },
    {
      method: 'get',
      path: '/openapi.json',
      operation: {
        operationId: 'getOpenApiDocument',
        summary: 'This document',
        description:
          'The OpenAPI 3.1 document of the public API, generated from the schemas the routes validate with; `servers` names this gateway (PUBLIC_BASE_URL).',
        tags: ['Health'],
        security: OPEN,
        responses: {
          '200': {
            description: 'The OpenAPI document.',
            content: { 'application/json': { schema: { type: 'object', required: ['openapi', 'info', 'paths'] } } },
          },
        },
      },
    },
  ];
}
