/** Content sniffing by magic bytes: the declared type of an upload or a URL is not trusted. */
export type ImageMime = 'image/png' | 'image/jpeg' | 'image/webp' | 'image/gif';

export function sniffImage(bytes: Buffer): ImageMime | null {
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (bytes.length >= 12 && bytes.toString('ascii', 0, 4) === 'RIFF' && bytes.toString('ascii', 8, 12) === 'WEBP') return 'image/webp';
  if (bytes.length >= 6 && (bytes.toString('ascii', 0, 6) === 'GIF87a' || bytes.toString('ascii', 0, 6) === 'GIF89a')) return 'image/gif';
  return null;
}

export function isMp4(bytes: Buffer): boolean {
  return bytes.length >= 8 && bytes.toString('ascii', 4, 8) === 'ftyp';
}

export const IMAGE_EXTENSIONS: Record<ImageMime, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/webp': 'webp',
  'image/gif': 'gif',
};

/** `data:image/png;base64,....` -> bytes, or null when it is not a base64 data URL. */
export function decodeDataUrl(value: string): { declaredType: string; bytes: Buffer } | null {
  const match = /^data:([\w.+-]+\/[\w.+-]+)?(?:;[\w-]+=[\w.-]+)*;base64,([A-Za-z0-9+/=\s_-]*)$/.exec(value);
  if (!match) return null;
  return { declaredType: match[1] ?? '', bytes: Buffer.from(match[2] ?? '', 'base64') };
}
