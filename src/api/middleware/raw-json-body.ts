import type { Middleware } from 'koa';
import { InvalidRequestError, PayloadTooLargeError } from '../errors';
import type { GatewayState } from '../context';

/**
 * A JSON body read straight off the socket: the parsed value on ctx.request.body and the
 * bytes on ctx.state.rawBody. The text proxy forwards those bytes as they are when it has
 * nothing to change, so it never pays for re-serialising a large (image, PDF) request.
 */
export function rawJsonBody(limitBytes: number): Middleware<GatewayState> {
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
    try {
      ctx.request.body = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new InvalidRequestError('The request body is not valid JSON.', null, 'invalid_json');
    }
    ctx.state.rawBody = raw;
    await next();
  };
}
