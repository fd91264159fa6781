import type { Context } from 'koa';
import { GatewayError } from '../errors';

/**
 * Request bodies are read as sent: a compressed one (Content-Encoding: gzip, say) would reach the
 * parsers as bytes that are neither UTF-8 JSON nor a form, and be refused for that instead of for
 * its encoding. Inflating it is not offered: a few hundred KiB of gzip can stand for gigabytes.
 */
export function requireIdentityEncoding(ctx: Context): void {
  const encoding = ctx.get('content-encoding').trim().toLowerCase();
  if (encoding === '' || encoding === 'identity') return;
  throw new GatewayError(
    400,
    'invalid_request_error',
    `Content-Encoding '${encoding.slice(0, 40)}' is not accepted: send the body uncompressed.`,
    null,
    'unsupported_content_encoding',
    { 'accept-encoding': 'identity' },
  );
}
