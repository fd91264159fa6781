/**
 * The fetcher of user URLs against real local HTTP servers: the total deadline (a server that
 * drips its body, or its redirects, is cut off), the size cap (declared and counted), the
 * private-address guard on every hop, the caller's abort, and the temporary file, which must
 * be gone however a fetch ends. Then the per-key slots of the worker's fetching steps.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PerKeySlots } from '../../src/limits/per-key-slots';
import { FetchRejectedError, isPrivateAddress, sweepStaleFetches, withFetchedFile, type FetchedFile, type GuardedFetchOptions } from '../../src/net/url-guard';
import { FetchSlotsBusyError, UserUrlFetcher } from '../../src/net/user-url-fetcher';

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');

let tempDir: string;
let server: http.Server;
let base: string;
/** Pretends 127.0.0.1 is the public internet until a handler turns it private again. */
let loopbackIsPublic = true;
const sockets = new Set<Socket>();
/** Requests seen, with a promise that settles when the client's connection closes. */
const requests: { path: string; closed: Promise<void> }[] = [];

function drip(res: http.ServerResponse, everyMs: number): void {
  const timer = setInterval(() => res.write(Buffer.from([0])), everyMs);
  res.on('close', () => clearInterval(timer));
}

beforeAll(async () => {
  tempDir = fs.mkdtempSync(path.join(os.tmpdir(), 'url-guard-test-'));
  server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    requests.push({ path: url.pathname, closed: new Promise((r) => res.on('close', () => r())) });
    const port = (server.address() as AddressInfo).port;
    switch (url.pathname) {
      case '/file':
        res.writeHead(200, { 'content-type': 'image/png' });
        return res.end(PNG);
      case '/redirect':
        res.writeHead(302, { location: '/file' });
        return res.end();
      case '/redirect-to-literal-private':
        res.writeHead(302, { location: `http://169.254.169.254:${port}/file` });
        return res.end();
      case '/redirect-to-private-name':
        // From here on the loopback host stands for an internal one, as a name that resolves inside would.
        loopbackIsPublic = false;
        res.writeHead(302, { location: `http://localhost:${port}/file` });
        return res.end();
      case '/slow-redirect':
        // Each hop answers in time, the chain does not.
        setTimeout(() => {
          res.writeHead(302, { location: '/slow-redirect' });
          res.end();
        }, 700);
        return;
      case '/drip':
        res.writeHead(200, { 'content-type': 'image/png' });
        res.write(PNG.subarray(0, 8));
        return drip(res, 400);
      case '/silent':
        // Accepts the request and never answers.
        return;
      case '/declared-big':
        // Declares more than the cap, then trickles: refused on the header, not at the deadline.
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': '10000000' });
        return drip(res, 400);
      case '/streamed-big':
        res.writeHead(200, { 'content-type': 'image/png' });
        for (let i = 0; i < 8; i++) res.write(Buffer.alloc(500, 1));
        return res.end();
      case '/broken':
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': '1000' });
        res.write(Buffer.alloc(10, 1));
        setTimeout(() => res.destroy(), 50);
        return;
      case '/status': {
        res.writeHead(Number(url.searchParams.get('code')));
        return res.end('no');
      }
      default:
        res.writeHead(404);
        return res.end();
    }
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise<void>((r) => server.close(() => r()));
  fs.rmSync(tempDir, { recursive: true, force: true });
});

beforeEach(() => {
  loopbackIsPublic = true;
});

afterEach(async () => {
  // Whatever the case did, it left no file behind (a removal still under way gets a moment).
  let left = fs.readdirSync(tempDir);
  for (let i = 0; i < 20 && left.length > 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    left = fs.readdirSync(tempDir);
  }
  // Emptied either way, so that one case's leftover fails that case only.
  for (const f of left) fs.rmSync(path.join(tempDir, f), { force: true });
  expect(left).toEqual([]);
});

function options(extra: Partial<GuardedFetchOptions> = {}): GuardedFetchOptions {
  return {
    allowPrivate: false,
    // The test server on 127.0.0.1 plays a public host; every other private address stays refused.
    blockedAddress: (a) => !(loopbackIsPublic && a === '127.0.0.1') && isPrivateAddress(a),
    maxBytes: 1000,
    deadlineMs: 20_000,
    idleTimeoutMs: 60_000,
    tempDir,
    ...extra,
  };
}

async function fetchBody(url: string, opts: GuardedFetchOptions = options()): Promise<{ file: FetchedFile; body: Buffer }> {
  return withFetchedFile(url, opts, async (file) => ({ file, body: await fs.promises.readFile(file.path) }));
}

async function rejection(promise: Promise<unknown>): Promise<FetchRejectedError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof FetchRejectedError) return err;
    throw err;
  }
  throw new Error('the fetch did not fail');
}

const lastRequest = (p: string) => {
  const hit = [...requests].reverse().find((r) => r.path === p);
  if (!hit) throw new Error(`no request for ${p}`);
  return hit;
};

describe('withFetchedFile', () => {
  test('streams the body into a temporary file, following redirects; the file is removed after use', async () => {
    let seenPath = '';
    const got = await withFetchedFile(`${base}/redirect`, options(), async (file) => {
      seenPath = file.path;
      expect(path.dirname(file.path)).toBe(tempDir);
      expect((await fs.promises.stat(file.path)).mode & 0o777).toBe(0o600);
      return { body: await fs.promises.readFile(file.path), bytes: file.bytes, type: file.contentType };
    });
    expect(got).toEqual({ body: PNG, bytes: PNG.length, type: 'image/png' });
    expect(fs.existsSync(seenPath)).toBe(false);
  });

  test('the file is removed when its use fails', async () => {
    await expect(withFetchedFile(`${base}/file`, options(), async () => Promise.reject(new Error('not an image')))).rejects.toThrow('not an image');
  });

  test('a dripping body is cut off at the deadline, as a retryable failure', async () => {
    const err = await rejection(fetchBody(`${base}/drip`, options({ deadlineMs: 2000 })));
    expect(err.message).toMatch(/did not finish within 2000 ms/);
    expect(err.retryable).toBe(true);
    await lastRequest('/drip').closed;
  });

  test('a server that never answers is cut off at the deadline, whatever the idle timeout', async () => {
    const err = await rejection(fetchBody(`${base}/silent`, options({ deadlineMs: 1500, idleTimeoutMs: 60_000 })));
    expect(err.message).toMatch(/did not finish within 1500 ms/);
    expect(err.retryable).toBe(true);
    await lastRequest('/silent').closed;
  });

  test('the deadline covers the whole redirect chain, not each hop', async () => {
    const err = await rejection(fetchBody(`${base}/slow-redirect`, options({ deadlineMs: 2000, maxRedirects: 50 })));
    expect(err.message).toMatch(/did not finish within 2000 ms/);
  });

  test('a silent connection is cut by the idle timeout when that comes first', async () => {
    const err = await rejection(fetchBody(`${base}/silent`, options({ deadlineMs: 20_000, idleTimeoutMs: 500 })));
    expect(err.message).toMatch(/silent for 500 ms/);
    expect(err.retryable).toBe(true);
  });

  test('a declared length over the cap is refused from the headers, before the body', async () => {
    const err = await rejection(fetchBody(`${base}/declared-big`, options({ deadlineMs: 20_000 })));
    expect(err.message).toMatch(/larger than 1000 bytes/);
    expect(err.retryable).toBe(false);
    await lastRequest('/declared-big').closed;
  });

  test('a body over the cap without a declared length is stopped while it streams', async () => {
    const err = await rejection(fetchBody(`${base}/streamed-big`));
    expect(err.message).toMatch(/larger than 1000 bytes/);
    expect(err.retryable).toBe(false);
  });

  test('a body that breaks off is a retryable failure', async () => {
    const err = await rejection(fetchBody(`${base}/broken`));
    expect(err.message).toMatch(/broke off/);
    expect(err.retryable).toBe(true);
  });

  test.each([
    [404, false],
    [403, false],
    [429, true],
    [500, true],
    [503, true],
  ])('HTTP %s: retryable %s', async (code, retryable) => {
    const err = await rejection(fetchBody(`${base}/status?code=${code}`));
    expect(err.message).toMatch(new RegExp(`HTTP ${code}`));
    expect(err.retryable).toBe(retryable);
  });

  test("the caller's abort stops a fetch in flight, with the caller's reason", async () => {
    const controller = new AbortController();
    const reason = new Error('activity cancelled');
    const fetching = fetchBody(`${base}/drip`, options({ deadlineMs: 60_000, signal: controller.signal }));
    // Aborted once the body has started to arrive.
    await new Promise((r) => setTimeout(r, 600));
    controller.abort(reason);
    await expect(fetching).rejects.toBe(reason);
    await lastRequest('/drip').closed;
  });

  test('an already aborted signal makes no request', async () => {
    const before = requests.length;
    const reason = new Error('cancelled before');
    await expect(fetchBody(`${base}/file`, options({ signal: AbortSignal.abort(reason) }))).rejects.toBe(reason);
    expect(requests.length).toBe(before);
  });

  test('refuses a host that resolves to a private address', async () => {
    const localhost = base.replace('127.0.0.1', 'localhost');
    const err = await rejection(fetchBody(`${localhost}/file`, { ...options(), blockedAddress: undefined }));
    expect(err.message).toMatch(/private address/);
    expect(err.retryable).toBe(false);
  });

  test('refuses a literal private address', async () => {
    const err = await rejection(fetchBody(`${base}/file`, { ...options(), blockedAddress: undefined }));
    expect(err.message).toMatch(/private address/);
  });

  test('refuses a redirect to a literal private address, before connecting', async () => {
    const err = await rejection(fetchBody(`${base}/redirect-to-literal-private`));
    expect(err.message).toMatch(/private address \(169\.254\.169\.254\)/);
  });

  test('refuses a redirect to a name that resolves to a private address', async () => {
    const before = requests.filter((r) => r.path === '/file').length;
    const err = await rejection(fetchBody(`${base}/redirect-to-private-name`));
    expect(err.message).toMatch(/private address \(localhost\)/);
    expect(requests.filter((r) => r.path === '/file').length).toBe(before);
  });

  test('fetches private addresses when they are allowed', async () => {
    const localhost = base.replace('127.0.0.1', 'localhost');
    const { body } = await fetchBody(`${localhost}/redirect`, { ...options(), blockedAddress: undefined, allowPrivate: true });
    expect(body).toEqual(PNG);
  });

  test('refuses other schemes, bad URLs and endless redirects', async () => {
    expect((await rejection(fetchBody('file:///etc/passwd'))).message).toMatch(/scheme/);
    expect((await rejection(fetchBody('http://'))).message).toMatch(/not a valid URL/);
    expect((await rejection(fetchBody(`${base}/slow-redirect`, options({ maxRedirects: 1 })))).message).toMatch(/too many redirects/);
  });
});

describe('sweepStaleFetches', () => {
  test('removes fetch files older than the limit, and nothing else', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'url-guard-sweep-'));
    try {
      for (const name of ['fetch-1-old', 'fetch-2-new', 'other-old']) fs.writeFileSync(path.join(dir, name), 'x');
      const old = new Date(Date.now() - 2 * 3600_000);
      fs.utimesSync(path.join(dir, 'fetch-1-old'), old, old);
      fs.utimesSync(path.join(dir, 'other-old'), old, old);
      expect(await sweepStaleFetches(dir, 3600_000)).toBe(1);
      expect(fs.readdirSync(dir).sort()).toEqual(['fetch-2-new', 'other-old']);
      expect(await sweepStaleFetches(path.join(dir, 'missing'), 1)).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('PerKeySlots', () => {
  test('a key holds at most its cap; other keys are not affected; release is idempotent', () => {
    const slots = new PerKeySlots(2);
    const a1 = slots.tryAcquire('a');
    const a2 = slots.tryAcquire('a');
    expect(a1).not.toBeNull();
    expect(a2).not.toBeNull();
    expect(slots.tryAcquire('a')).toBeNull();
    const b1 = slots.tryAcquire('b');
    expect(b1).not.toBeNull();
    a1!();
    a1!();
    expect(slots.held('a')).toBe(1);
    const a3 = slots.tryAcquire('a');
    expect(a3).not.toBeNull();
    expect(slots.tryAcquire('a')).toBeNull();
    a2!();
    a3!();
    b1!();
    expect(slots.activeKeys).toBe(0);
  });

  test('refuses a cap below one', () => {
    expect(() => new PerKeySlots(0)).toThrow(RangeError);
  });
});

describe('UserUrlFetcher', () => {
  const fetcher = () => new UserUrlFetcher({ allowPrivate: true, maxBytes: 1000, deadlineMs: 20_000, idleTimeoutMs: 60_000, maxPerKey: 2, tempDir });

  test('a key over its cap is turned away at once with a retry delay; another key is not; a slot frees when its step ends', async () => {
    const f = fetcher();
    let finish!: () => void;
    const hold = new Promise<void>((r) => (finish = r));
    const held = [f.forKey('a', undefined, () => hold), f.forKey('a', undefined, () => hold)];
    const err = await f
      .forKey('a', undefined, async () => 'ran')
      .then(
        () => null,
        (e: unknown) => e,
      );
    if (!(err instanceof FetchSlotsBusyError)) throw new Error('the third step of key a was not turned away');
    expect(err.retryAfterMs).toBeGreaterThanOrEqual(2000);
    expect(err.retryAfterMs).toBeLessThan(5000);
    expect(await f.forKey('b', undefined, (fetchFile) => fetchFile(`${base}/file`, async (file) => file.bytes))).toBe(PNG.length);
    finish();
    await Promise.all(held);
    expect(f.slots.held('a')).toBe(0);
    await expect(f.forKey('a', undefined, async () => Promise.reject(new Error('failed step')))).rejects.toThrow('failed step');
    expect(f.slots.held('a')).toBe(0);
  });

  test('one URL of a step failing aborts its siblings instead of letting them run to the deadline', async () => {
    const f = fetcher();
    const step = f.forKey('c', undefined, (fetchFile) =>
      Promise.all([fetchFile(`${base}/drip`, async () => 'drip'), fetchFile(`${base}/status?code=404`, async () => 'missing')]),
    );
    await expect(step).rejects.toThrow(/HTTP 404/);
    // The dripping sibling's connection is closed by the abort (its deadline is 20 s away).
    await lastRequest('/drip').closed;
    expect(f.slots.held('c')).toBe(0);
  });

  test("the caller's signal aborts every fetch of the step", async () => {
    const f = fetcher();
    const controller = new AbortController();
    const reason = new Error('cancelled');
    const step = f.forKey('d', controller.signal, (fetchFile) => fetchFile(`${base}/drip`, async () => 'drip'));
    await new Promise((r) => setTimeout(r, 500));
    controller.abort(reason);
    await expect(step).rejects.toBe(reason);
    await lastRequest('/drip').closed;
  });
});
