import type { SecurityRequirement, SecurityScheme } from './types';

/** How the gateway authenticates (middleware/auth.ts, middleware/admin-auth.ts). */
export const SECURITY_SCHEMES: Record<'apiKey' | 'apiKeyHeader' | 'adminToken' | 'metricsToken' | 'consoleSession', SecurityScheme> = {
  apiKey: {
    type: 'http',
    scheme: 'bearer',
    description: "A key issued by this gateway (POST /admin/keys): `Authorization: Bearer sk-...`. Other providers' keys are refused (401).",
  },
  apiKeyHeader: {
    type: 'apiKey',
    in: 'header',
    name: 'x-api-key',
    description: 'The same gateway key in `x-api-key`, as Anthropic clients send it; it wins over Authorization when both are sent.',
  },
  adminToken: {
    type: 'http',
    scheme: 'bearer',
    description: '`Authorization: Bearer $ADMIN_TOKEN` (generated into DATA_DIR/admin-token when unset).',
  },
  consoleSession: {
    type: 'apiKey',
    in: 'cookie',
    name: 'gw_session',
    description:
      "The console's session cookie (POST /console/api/session). Accepted by the key and admin routes when no Authorization / x-api-key header is sent; a request other than GET/HEAD/OPTIONS also needs X-CSRF-Token (docs/console.md).",
  },
  metricsToken: {
    type: 'http',
    scheme: 'bearer',
    description: '`Authorization: Bearer $METRICS_TOKEN`, a token that reads /metrics only (the admin token reads it too).',
  },
};

/** The /v1 video, chat and billing routes and /motion/v1: the key as a Bearer token only. */
export const KEY_BEARER: SecurityRequirement[] = [{ apiKey: [] }];
/** /v1/messages and /v1/models: x-api-key or Bearer. */
export const KEY_EITHER: SecurityRequirement[] = [{ apiKeyHeader: [] }, { apiKey: [] }];
export const ADMIN: SecurityRequirement[] = [{ adminToken: [] }];
export const METRICS: SecurityRequirement[] = [{ metricsToken: [] }, { adminToken: [] }];
/** The console's session routes (GET and DELETE read the cookie). */
export const CONSOLE_SESSION: SecurityRequirement[] = [{ consoleSession: [] }];
/** Health probes, signed file links and this document. */
export const OPEN: SecurityRequirement[] = [];
