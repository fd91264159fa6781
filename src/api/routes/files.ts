import Router from '@koa/router';
import type { Context } from 'koa';
import type { BlobStore } from '../../files/blob-store';
import type { UrlSigner } from '../../files/signed-url';
import type { GatewayState } from '../context';
import { GatewayError, NotFoundError } from '../errors';
import { decodeTarget } from '../middleware/request-target';

const CONTENT_TYPES: Record<string, string> = { mp4: 'video/mp4', png: 'image/png', jpg: 'image/jpeg', webp: 'image/webp', gif: 'image/gif' };

/**
 * Parses one `bytes=a-b` / `bytes=a-` / `bytes=-n` range; null = the whole file (200), 'invalid'
 * = 416. As RFC 9110 (14.2) has it, a Range the server does not serve is ignored rather than
 * refused: another unit than bytes (which it must ignore), several ranges (no
 * multipart/byteranges here), or one that does not parse. Only a byte range the file cannot
 * satisfy is a 416.
 */
export function parseRange(header: string | undefined, size: number): { start: number; end: number } | null | 'invalid' {
  if (!header) return null;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return null;
  let start: number;
  let end: number;
  if (match[1] === '') {
    const suffix = Number(match[2]);
    if (suffix === 0) return 'invalid';
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(match[1]);
    end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  }
  if (start > end || start >= size) return 'invalid';
  return { start, end };
}

/**
 * GET /files/<key>?expires=&signature=: the signed, expiring links that video_url holds.
 * Range requests are served so players can seek.
 */
export function fileRoutes(blobs: BlobStore, signer: UrlSigner): Router<GatewayState> {
  const router = new Router<GatewayState>();
  router.get('/files/*path', async (ctx) => {
    // requestTarget() refused a path that does not decode; a segment that still does not is no file of ours.
    const segments = ctx.path.slice('/files/'.length).split('/').map(decodeTarget);
    if (segments.some((s) => s === null)) throw new NotFoundError('The file no longer exists.');
    const key = segments.join('/');
    const verdict = signer.verify(key, str(ctx.query.expires), str(ctx.query.signature));
    if (verdict === 'expired')
      throw new GatewayError(403, 'invalid_request_error', 'This link has expired; read the task again for a fresh video_url.', null, 'link_expired');
    if (verdict !== 'ok') throw new GatewayError(403, 'invalid_request_error', 'Invalid file link signature.', null, 'invalid_signature');
    ctx.set('cache-control', 'private, max-age=3600');
    await serveBlob(ctx, blobs, key);
  });
  return router;
}

/**
 * Answers with a stored file's bytes, a `Range` honoured (206, or 416 when it cannot be), its
 * type from its extension. 404 when the file is gone.
 */
export async function serveBlob(ctx: Context, blobs: BlobStore, key: string): Promise<void> {
  const size = await blobs.size(key);
  if (size === null) throw new NotFoundError('The file no longer exists.');
  ctx.set('accept-ranges', 'bytes');
  ctx.type = CONTENT_TYPES[key.split('.').pop() ?? ''] ?? 'application/octet-stream';
  const range = parseRange(ctx.get('range') || undefined, size);
  if (range === 'invalid') {
    ctx.set('content-range', `bytes */${size}`);
    throw new GatewayError(416, 'invalid_request_error', 'Requested range not satisfiable.', null, 'invalid_range');
  }
  if (range) {
    ctx.status = 206;
    ctx.set('content-range', `bytes ${range.start}-${range.end}/${size}`);
    ctx.length = range.end - range.start + 1;
    ctx.body = blobs.stream(key, range.start, range.end);
  } else {
    ctx.length = size;
    ctx.body = blobs.stream(key);
  }
}

function str(v: string | string[] | undefined): string | undefined {
  return typeof v === 'string' ? v : undefined;
}
