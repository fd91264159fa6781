import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';

/**
 * Fetching URLs that users hand us (reference images, character clips) must not reach
 * the gateway's own network. The check runs in the socket's DNS lookup, so the address
 * that is checked is the address that is connected to (no DNS-rebinding gap), and again
 * on every redirect hop.
 */
const blocked = new net.BlockList();
for (const [addr, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16],
  ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(addr, prefix, 'ipv4');
for (const [addr, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b::', 96], ['2001:db8::', 32]] as const) {
  blocked.addSubnet(addr, prefix, 'ipv6');
}

export function isPrivateAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped?.[1]) return blocked.check(mapped[1], 'ipv4');
    return blocked.check(address, 'ipv6');
  }
  return true;
}

export class FetchRejectedError extends Error {
  constructor(message: string, readonly retryable = false) {
    super(message);
  }
}

export interface GuardedFetchOptions {
  allowPrivate: boolean;
  maxBytes: number;
  timeoutMs: number;
  maxRedirects?: number;
}

export interface FetchedFile {
  bytes: Buffer;
  contentType: string | undefined;
}

function guardedLookup(allowPrivate: boolean): net.LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const list = Array.isArray(addresses) ? addresses : [];
      const usable = allowPrivate ? list : list.filter((a) => !isPrivateAddress(a.address));
      if (usable.length === 0) {
        return callback(Object.assign(new Error(`refusing to fetch from a private address (${hostname})`), { code: 'EPRIVATE' }), '', 0);
      }
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, usable);
      const first = usable[0]!;
      callback(null, first.address, first.family);
    });
  };
}

/** GET a user-supplied http(s) URL with the private-range guard, a size cap and a deadline. */
export async function guardedFetch(rawUrl: string, opts: GuardedFetchOptions): Promise<FetchedFile> {
  let url = new URL(rawUrl);
  for (let hop = 0; hop <= (opts.maxRedirects ?? 3); hop++) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new FetchRejectedError(`unsupported URL scheme ${url.protocol}`);
    if (!opts.allowPrivate && net.isIP(url.hostname.replace(/^\[|\]$/g, '')) && isPrivateAddress(url.hostname.replace(/^\[|\]$/g, ''))) {
      throw new FetchRejectedError(`refusing to fetch from a private address (${url.hostname})`);
    }
    const res = await getOnce(url, opts);
    if ('redirect' in res) {
      url = new URL(res.redirect, url);
      continue;
    }
    return res;
  }
  throw new FetchRejectedError('too many redirects');
}

function getOnce(url: URL, opts: GuardedFetchOptions): Promise<FetchedFile | { redirect: string }> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.get(url, { lookup: guardedLookup(opts.allowPrivate), timeout: opts.timeoutMs }, (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && res.headers.location) {
        res.resume();
        return resolve({ redirect: res.headers.location });
      }
      if (status !== 200) {
        res.resume();
        return reject(new FetchRejectedError(`GET ${url.host} answered HTTP ${status}`, status >= 500 || status === 429));
      }
      const declared = Number(res.headers['content-length'] ?? 0);
      if (declared > opts.maxBytes) {
        res.destroy();
        return reject(new FetchRejectedError(`file is larger than ${opts.maxBytes} bytes`));
      }
      const chunks: Buffer[] = [];
      let total = 0;
      res.on('data', (chunk: Buffer) => {
        total += chunk.length;
        if (total > opts.maxBytes) {
          res.destroy();
          reject(new FetchRejectedError(`file is larger than ${opts.maxBytes} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => resolve({ bytes: Buffer.concat(chunks), contentType: res.headers['content-type'] }));
      res.on('error', (err) => reject(new FetchRejectedError(err.message, true)));
    });
    req.on('timeout', () => req.destroy(new FetchRejectedError(`GET ${url.host} timed out`, true)));
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err instanceof FetchRejectedError) return reject(err);
      if (err.code === 'EPRIVATE') return reject(new FetchRejectedError(err.message));
      reject(new FetchRejectedError(`GET ${url.host} failed: ${err.code ?? err.message}`, err.code !== 'ENOTFOUND'));
    });
  });
}
