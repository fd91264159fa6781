import net from 'node:net';
import { decodeDataUrl, IMAGE_EXTENSIONS, sniffImage, type ImageMime } from '../net/media';
import { isPrivateAddress } from '../net/url-guard';
import { storageKeys, type BlobStore } from '../files/blob-store';
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
  // Every entry is checked before any is stored, so a refused request stores nothing.
  const checked = images.map((value, i): { url: string } | { bytes: Buffer; mimeType: ImageMime; key: string } => {
    const param = `images[${i}]`;
    if (!value.startsWith('data:')) return { url: assertFetchable(value, param, opts.allowPrivate, ' or a base64 data: URL') };
    const decoded = decodeDataUrl(value);
    if (!decoded) throw new InvalidRequestError(`${param} is not a valid base64 data: URL.`, param);
    if (decoded.bytes.length > opts.maxBytes) throw new PayloadTooLargeError(opts.maxBytes);
    const mimeType = sniffImage(decoded.bytes);
    if (!mimeType) throw new InvalidRequestError(`${param} is not a PNG, JPEG, WEBP or GIF image.`, param, 'invalid_image');
    return { bytes: decoded.bytes, mimeType, key: storageKeys.input(taskId, i, IMAGE_EXTENSIONS[mimeType]) };
  });
  const refs: ImageRef[] = [];
  try {
    for (const image of checked) {
      if ('url' in image) {
        refs.push({ kind: 'url', url: image.url });
        continue;
      }
      await opts.blobs.write(image.key, image.bytes);
      refs.push({ kind: 'stored', key: image.key, mimeType: image.mimeType, bytes: image.bytes.length });
    }
  } catch (err) {
    await removeStoredInputs(opts.blobs, refs);
    throw err;
  }
  return refs;
}

/** Removes the inputs stored for a request that was refused after all. */
export async function removeStoredInputs(blobs: BlobStore, refs: readonly ImageRef[]): Promise<void> {
  await Promise.all(refs.map((img) => (img.kind === 'stored' ? blobs.remove(img.key).catch(() => undefined) : undefined)));
}
