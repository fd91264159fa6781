import type { Middleware } from 'koa';
import type { GatewayState } from '../context';
import { buildOpenApiDocument } from './document';

/**
 * GET /openapi.json: the document for this gateway's PUBLIC_BASE_URL, built on the first request
 * (not at start: most processes are never asked) and then served as the same bytes.
 */
export function serveOpenApi(serverUrl: string): Middleware<GatewayState> {
  let bytes: Buffer | null = null;
  return (ctx) => {
    bytes ??= Buffer.from(JSON.stringify(buildOpenApiDocument(serverUrl)));
    ctx.set('cache-control', 'public, max-age=300');
    ctx.type = 'application/json';
    ctx.body = bytes;
  };
}
