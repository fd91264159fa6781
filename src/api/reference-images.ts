import net from 'node:net';
import { decodeDataUrl, IMAGE_EXTENSIONS, sniffImage } from '../net/media';
import { isPrivateAddress } from '../net/url-guard';
import { storageKeys, type BlobStore } from '../storage/blob-store';
import type { ImageRef } from '../tasks/task';
import { InvalidRequestError, PayloadTooLargeError } from './errors';

export interface ImageIntakeOptions {
  blobs: BlobStore;
  allowPrivate: boolean;
  maxBytes: number;
}

/**
 * A user URL the worker will fetch: http(s), and not a literal private address (names that
 * resolve to one are refused by the guard at connect time). Returns the normalised URL.
 */
export function assertFetchable(value: string, param: string, allowPrivate: boolean, alternative = ''): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidRequestError(`${param} must be an http(s) URL${alternative}.`, param);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidRequestError(`${param} must be an http(s) URL${alternative}.`, param);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!allowPrivate && (host === 'localhost' || (net.isIP(host) && isPrivateAddress(host)))) {
    throw new InvalidRequestError(`${param} points at a private network address, which this gateway does not fetch.`, param, 'private_address');
  }
  return url.href;
}

/**
 * `images` entries: http(s) URLs are fetched later by the worker (through the private-range
 * guard; literal private addresses are refused here already), base64 data: URLs are decoded,
 * checked to really be images and stored now, so workflow history carries a key, not megabytes.
 */
export async function intakeImages(taskId: string, images: readonly string[], opts: ImageIntakeOptions): Promise<ImageRef[]> {
  const refs: ImageRef[] = [];
  for (const [i, value] of images.entries()) {
    const param = `images[${i}]`;
    if (value.startsWith('data:')) {
      const decoded = decodeDataUrl(value);
      if (!decoded) throw new InvalidRequestError(`${param} is not a valid base64 data: URL.`, param);
      if (decoded.bytes.length > opts.maxBytes) throw new PayloadTooLargeError(opts.maxBytes);
      const mimeType = sniffImage(decoded.bytes);
      if (!mimeType) throw new InvalidRequestError(`${param} is not a PNG, JPEG, WEBP or GIF image.`, param, 'invalid_image');
      const key = storageKeys.input(taskId, i, IMAGE_EXTENSIONS[mimeType]);
      await opts.blobs.write(key, decoded.bytes);
      refs.push({ kind: 'stored', key, mimeType, bytes: decoded.bytes.length });
      continue;
    }
    refs.push({ kind: 'url', url: assertFetchable(value, param, opts.allowPrivate, ' or a base64 data: URL') });
  }
  return refs;
}
