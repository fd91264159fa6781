import type { Middleware } from 'koa';
import { InvalidRequestError, PayloadTooLargeError } from '../errors';
import type { GatewayState } from '../context';

/**
 * The one JSON body reader: application/json only (a wrong content type is a 400 that says
 * which one is expected, instead of a body that silently parses to nothing), up to a
 * documented limit, an object or array at the top (as koa-body's strict mode had it). The
 * parsed value goes on ctx.request.body and the bytes on ctx.state.rawBody: the text proxy
 * forwards those bytes as they are when it has nothing to change, so it never pays for
 * re-serialising a large (image, PDF) request.
 */
export function jsonBody(limitBytes: number): Middleware<GatewayState> {
  return async (ctx, next) => {
    if (!ctx.is('application/json')) {
      throw new InvalidRequestError(`Content-Type must be application/json (got ${ctx.get('content-type') || 'none'}).`, null, 'unsupported_content_type');
    }
    const declared = Number(ctx.get('content-length'));
    if (Number.isFinite(declared) && declared > limitBytes) throw new PayloadTooLargeError(limitBytes);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limitBytes) throw new PayloadTooLargeError(limitBytes);
      chunks.push(chunk);
    }
    const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    const text = raw.toString('utf8');
    const first = text.trimStart()[0];
    try {
      if (first !== '{' && first !== '[') throw new SyntaxError('not an object or array');
      ctx.request.body = JSON.parse(text);
    } catch {
      throw new InvalidRequestError('The request body is not valid JSON.', null, 'invalid_json');
    }
    ctx.state.rawBody = raw;
    await next();
  };
}
