import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Expiring links to stored files. video_url must work in a browser or a player with no
 * header, so the link carries its own proof: an HMAC over the key and the expiry.
 */
export class UrlSigner {
  constructor(
    private readonly secret: string,
    private readonly baseUrl: string,
    private readonly ttlSeconds: number,
  ) {}

  private signature(key: string, expires: number): Buffer {
    return createHmac('sha256', this.secret).update(`${key}\n${expires}`).digest();
  }

  sign(key: string, now = Date.now()): string {
    const expires = Math.floor(now / 1000) + this.ttlSeconds;
    const sig = this.signature(key, expires).toString('base64url');
    const pathPart = key.split('/').map(encodeURIComponent).join('/');
    return `${this.baseUrl}/files/${pathPart}?expires=${expires}&signature=${sig}`;
  }

  verify(key: string, expires: string | undefined, signature: string | undefined, now = Date.now()): 'ok' | 'expired' | 'invalid' {
    if (!expires || !signature || !/^\d{1,12}$/.test(expires)) return 'invalid';
    const expected = this.signature(key, Number(expires));
    const given = Buffer.from(signature, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid';
    return Number(expires) * 1000 < now ? 'expired' : 'ok';
  }
}
