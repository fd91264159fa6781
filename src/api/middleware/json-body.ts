import type { Middleware } from 'koa';
import { koaBody } from 'koa-body';
import { InvalidRequestError } from '../errors';
import type { GatewayState } from '../context';

/**
 * JSON bodies only, up to a documented limit. A wrong content type is a 400 that says
 * which one is expected (instead of a body that silently parses to nothing).
 */
export function jsonBody(limitBytes: number): Middleware<GatewayState>[] {
  const requireJson: Middleware<GatewayState> = async (ctx, next) => {
    if (!ctx.is('application/json')) {
      throw new InvalidRequestError(
        `Content-Type must be application/json (got ${ctx.get('content-type') || 'none'}).`,
        null,
        'unsupported_content_type',
      );
    }
    await next();
  };
  const parse = koaBody({ json: true, urlencoded: false, text: false, multipart: false, jsonLimit: limitBytes, jsonStrict: true, includeUnparsed: false });
  return [requireJson, parse as unknown as Middleware<GatewayState>];
}
