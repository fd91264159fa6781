import { isUtf8 } from 'node:buffer';
import type { Middleware } from 'koa';
import { InvalidRequestError, PayloadTooLargeError } from '../errors';
import type { GatewayState } from '../context';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../schemas/json-text';

/**
 * The one JSON body reader: application/json only (a wrong content type is a 400 that says
 * which one is expected, instead of a body that silently parses to nothing), up to a
 * documented limit, an object or array at the top (as koa-body's strict mode had it). The
 * parsed value goes on ctx.request.body and the bytes on ctx.state.rawBody: the text proxy
 * forwards those bytes as they are when it has nothing to change, so it never pays for
 * re-serialising a large (image, PDF) request. Nesting deeper than MAX_JSON_DEPTH is a 400
 * before anything parses it (see json-text.ts).
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
    try {
      for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > limitBytes) throw new PayloadTooLargeError(limitBytes);
        chunks.push(chunk);
      }
    } catch (err) {
      if (err instanceof PayloadTooLargeError) throw err;
      // Reading fails only when the client's connection does (it left, or HTTP_REQUEST_TIMEOUT_MS
      // cut it off): its error, not an unhandled one.
      throw new InvalidRequestError('The connection closed before the request body was complete.', null, 'incomplete_body');
    }
    const raw = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    // JSON is UTF-8 (RFC 8259). Decoding would silently turn bad bytes into U+FFFD, while the
    // text proxy forwards the bytes themselves; isUtf8 is a vectorised check, cheap on 20 MB.
    if (!isUtf8(raw)) throw new InvalidRequestError('The request body is not valid UTF-8.', null, 'invalid_json');
    const text = raw.toString('utf8');
    const first = text.trimStart()[0];
    if (first !== '{' && first !== '[') throw invalidJson();
    if (exceedsJsonDepth(text, MAX_JSON_DEPTH)) {
      throw new InvalidRequestError(`The request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels.`, null, 'json_too_deep');
    }
    try {
      ctx.request.body = JSON.parse(text);
    } catch {
      throw invalidJson();
    }
    ctx.state.rawBody = raw;
    await next();
  };
}

function invalidJson(): InvalidRequestError {
  return new InvalidRequestError('The request body is not valid JSON.', null, 'invalid_json');
}
