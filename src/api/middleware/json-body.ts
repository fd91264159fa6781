import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';
import { InvalidRequestError, PayloadTooLargeError } from '../errors';
import type { GatewayState } from '../context';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../schemas/json-text';
import { requireIdentityEncoding } from './body-encoding';

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
    requireIdentityEncoding(ctx);
    const declared = Number(ctx.get('content-length'));
    if (Number.isFinite(declared) && declared > limitBytes) throw new PayloadTooLargeError(limitBytes);
    const raw = await readBody(ctx.req, limitBytes);
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

/**
 * The request's body, whole; over `limitBytes` (a chunked body that declared no length) it is a
 * 413, and the rest is not read. Read with the stream's events rather
 * than an async iterator, which costs every request several promises and a reader object. The
 * connection failing before the end (the client left, or HTTP_REQUEST_TIMEOUT_MS cut it off) is
 * the client's error, not an unhandled one.
 */
function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = (err: Error) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onBroken);
      req.off('close', onBroken);
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limitBytes) chunks.push(chunk);
      else {
        // The rest is not read: the 413 goes out, and the request deadline (HTTP_REQUEST_TIMEOUT_MS)
        // closes the connection. Closing it at once would reset it under the bytes still coming,
        // and the client could lose the 413 with them.
        req.pause();
        stop(new PayloadTooLargeError(limitBytes));
      }
    };
    const onEnd = () => {
      req.off('error', onBroken);
      req.off('close', onBroken);
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
    };
    const onBroken = () => stop(new InvalidRequestError('The connection closed before the request body was complete.', null, 'incomplete_body'));
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onBroken);
    req.once('close', onBroken);
  });
}

function invalidJson(): InvalidRequestError {
  return new InvalidRequestError('The request body is not valid JSON.', null, 'invalid_json');
}
