import { randomBytes } from 'node:crypto';
import dns from 'node:dns';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { untilClosed } from '../files/until-closed';

/**
 * Fetching URLs that users hand us (reference images, character clips) must not reach
 * the gateway's own network. The check runs in the socket's DNS lookup, so the address
 * that is checked is the address that is connected to (no DNS-rebinding gap), and again
 * on every redirect hop.
 *
 * A user's server is also not trusted to be quick or small: one deadline covers the whole
 * fetch (DNS, connect, headers and body, across redirects), so a server that drips a byte a
 * minute is cut off at the deadline rather than kept alive by an idle timeout; the body is
 * counted while it streams into a temporary file (never a growing buffer), and the file is
 * removed however the fetch and its use end.
 */
const blocked = new net.BlockList();
for (const [addr, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
  // 6to4 relays (deprecated): a path into IPv4 the gateway does not choose.
  ['192.88.99.0', 24],
] as const)
  blocked.addSubnet(addr, prefix, 'ipv4');
// Besides the private and local ranges, every IPv6 range that carries an IPv4 address inside
// it (compatible, translated, NAT64, 6to4, Teredo) or is not globally routed: an IPv4 address
// written as IPv6 must not pass where its IPv4 form is refused.
for (const [addr, prefix] of [
  ['::', 96],
  ['::ffff:0:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
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
  constructor(
    message: string,
    readonly retryable = false,
  ) {
    super(message);
  }
}

export interface GuardedFetchOptions {
  allowPrivate: boolean;
  maxBytes: number;
  /** Total time of the fetch: DNS, connect, headers and the whole body, across every redirect. */
  deadlineMs: number;
  /** Longest silence of the connection (a dripping server is still cut at deadlineMs). */
  idleTimeoutMs: number;
  /** Where the body is written (created if missing). */
  tempDir: string;
  /** Aborts the fetch from outside (the activity was cancelled); the fetch rejects with its reason. */
  signal?: AbortSignal;
  maxRedirects?: number;
  /** Which addresses are refused; default: the private ranges unless allowPrivate (tests stand in for the public internet). */
  blockedAddress?: (address: string) => boolean;
}

export interface FetchedFile {
  /** The temporary file holding the body; removed once the `use` callback has ended. */
  path: string;
  bytes: number;
  contentType: string | undefined;
}

/**
 * GETs a user-supplied http(s) URL into a temporary file and hands it to `use`. The file is
 * removed when `use` ends, or when the fetch fails, times out or is aborted.
 */
export async function withFetchedFile<T>(rawUrl: string, opts: GuardedFetchOptions, use: (file: FetchedFile) => Promise<T>): Promise<T> {
  await fs.promises.mkdir(opts.tempDir, { recursive: true, mode: 0o700 });
  const file = path.join(opts.tempDir, `fetch-${process.pid}-${randomBytes(8).toString('hex')}`);
  try {
    return await use(await fetchToFile(rawUrl, file, opts));
  } finally {
    await fs.promises.rm(file, { force: true });
  }
}

/**
 * Removes temporary files older than `olderThanMs` left by a process that died mid-fetch
 * (a live fetch's file is never older than its deadline plus its use).
 */
export async function sweepStaleFetches(tempDir: string, olderThanMs: number, now = Date.now()): Promise<number> {
  let names: string[];
  try {
    names = await fs.promises.readdir(tempDir);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    if (!name.startsWith('fetch-')) continue;
    const file = path.join(tempDir, name);
    const stat = await fs.promises.stat(file).catch(() => null);
    if (stat && now - stat.mtimeMs > olderThanMs) {
      await fs.promises.rm(file, { force: true });
      removed++;
    }
  }
  return removed;
}

/** A DNS lookup for sockets that refuses blocked addresses: the address checked is the one connected to. Also used by webhook deliveries. */
export function guardedLookup(blocked: (address: string) => boolean): net.LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const list = Array.isArray(addresses) ? addresses : [];
      const usable = list.filter((a) => !blocked(a.address));
      if (usable.length === 0) {
        return callback(Object.assign(new Error(`refusing to fetch from a private address (${hostname})`), { code: 'EPRIVATE' }), '', 0);
      }
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, usable);
      const first = usable[0];
      callback(null, first.address, first.family);
    });
  };
}

function parseUrl(raw: string, base?: URL): URL {
  try {
    return new URL(raw, base);
  } catch {
    throw new FetchRejectedError(base ? 'the server redirected to an invalid URL' : 'not a valid URL');
  }
}

async function fetchToFile(rawUrl: string, file: string, opts: GuardedFetchOptions): Promise<FetchedFile> {
  let url = parseUrl(rawUrl);
  const blocked = opts.blockedAddress ?? (opts.allowPrivate ? () => false : isPrivateAddress);
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new FetchRejectedError(`GET ${url.host} did not finish within ${opts.deadlineMs} ms`, true)), opts.deadlineMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, deadline.signal]) : deadline.signal;
  try {
    for (let hop = 0; hop <= (opts.maxRedirects ?? 3); hop++) {
      signal.throwIfAborted();
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new FetchRejectedError(`unsupported URL scheme ${url.protocol}`);
      const host = url.hostname.replace(/^\[|\]$/g, '');
      if (net.isIP(host) && blocked(host)) {
        throw new FetchRejectedError(`refusing to fetch from a private address (${url.hostname})`);
      }
      const res = await getOnce(url, file, opts, blocked, signal);
      if ('redirect' in res) {
        url = parseUrl(res.redirect, url);
        continue;
      }
      return res;
    }
    throw new FetchRejectedError('too many redirects');
  } catch (err) {
    // Whatever the socket reported, an aborted fetch ends for the abort's reason: the
    // deadline's retryable error, or the activity's cancellation.
    if (signal.aborted) throw signal.reason;
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** Counts the body as it streams and stops it at the cap. */
function sizeCap(maxBytes: number, counted: (n: number) => void): Transform {
  let total = 0;
  return new Transform({
    transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback) {
      total += chunk.length;
      counted(total);
      if (total > maxBytes) return done(new FetchRejectedError(`file is larger than ${maxBytes} bytes`));
      done(null, chunk);
    },
  });
}

function getOnce(
  url: URL,
  file: string,
  opts: GuardedFetchOptions,
  blocked: (address: string) => boolean,
  signal: AbortSignal,
): Promise<FetchedFile | { redirect: string }> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    // The first failure wins: a destroyed socket also errors the response with a vaguer reason.
    let failure: Error | undefined;
    const fail = (err: Error) => {
      failure ??= err;
      reject(failure);
    };
    // agent: false: a connection of its own, never reused for another user's URL.
    const req = client.get(url, { lookup: guardedLookup(blocked), timeout: opts.idleTimeoutMs, signal, agent: false }, (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && res.headers.location) {
        res.destroy();
        return resolve({ redirect: res.headers.location });
      }
      if (status !== 200) {
        res.destroy();
        return fail(new FetchRejectedError(`GET ${url.host} answered HTTP ${status}`, status >= 500 || status === 429));
      }
      const declared = Number(res.headers['content-length'] ?? 0);
      if (declared > opts.maxBytes) {
        res.destroy();
        return fail(new FetchRejectedError(`file is larger than ${opts.maxBytes} bytes`));
      }
      let bytes = 0;
      const out = fs.createWriteStream(file, { flags: 'wx', mode: 0o600 });
      pipeline(
        res,
        sizeCap(opts.maxBytes, (n) => (bytes = n)),
        out,
        { signal },
      ).then(
        () => resolve({ path: file, bytes, contentType: res.headers['content-type'] }),
        // Reported once the file is closed, so that withFetchedFile's removal finds it.
        async (err: NodeJS.ErrnoException) => {
          await untilClosed(out);
          if (err instanceof FetchRejectedError) return fail(err);
          if (err.syscall === 'open' || err.syscall === 'write') return fail(err);
          fail(new FetchRejectedError(`GET ${url.host} broke off: ${err.code ?? err.message}`, true));
        },
      );
    });
    req.on('timeout', () => req.destroy(new FetchRejectedError(`GET ${url.host} was silent for ${opts.idleTimeoutMs} ms`, true)));
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err instanceof FetchRejectedError) return fail(err);
      if (err.code === 'EPRIVATE') return fail(new FetchRejectedError(err.message));
      fail(new FetchRejectedError(`GET ${url.host} failed: ${err.code ?? err.message}`, err.code !== 'ENOTFOUND'));
    });
  });
}
