import type { Middleware } from 'koa';
import type { GatewayState } from '../context';
import { InvalidRequestError } from '../errors';

/**
 * The decoded text of a path or query string, or null when its percent-encoding is malformed
 * (a stray '%', a truncated or invalid UTF-8 sequence, an encoded lone surrogate) or it
 * decodes to a NUL, which no id, file key or parameter of the API contains and which the store
 * and the file system refuse with errors of their own.
 */
export function decodeTarget(raw: string): string | null {
  if (!raw.includes('%')) return raw.includes('\0') ? null : raw;
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return null;
  }
  return decoded.includes('\0') ? null : decoded;
}

/**
 * Every request's path and query string must decode: the router hands route parameters on
 * undecoded when they do not (and a handler decoding one itself threw a 500), so a bad
 * request target is a 400 here, before any route runs. Cheap on the hot path: a target
 * without '%' is not decoded at all.
 */
export function requestTarget(): Middleware<GatewayState> {
  // Not async: a layer every request passes costs no promise of its own.
  return (ctx, next) => {
    if (decodeTarget(ctx.path) === null) {
      throw new InvalidRequestError('The request path is not valid: malformed percent-encoding or a NUL character.', null, 'invalid_url');
    }
    const query = ctx.querystring;
    if (query !== '' && decodeTarget(query) === null) {
      throw new InvalidRequestError('The query string is not valid: malformed percent-encoding or a NUL character.', null, 'invalid_url');
    }
    return next();
  };
}
