/**
 * The API's HTTP server limits, against the real process with small settings: a client that
 * drips its headers (slowloris) or its body is cut off, a long answer (stream or slow upstream)
 * is not, and connections over HTTP_MAX_CONNECTIONS are refused without harming the others.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { call, createTask, waitForTerminal } from '../support/client';
import { waitFor } from '../support/ports';
import { buildRequest, rawRequest } from '../support/raw-http';
import { TEST_DATA } from '../support/processes';
import { startGateway, type Gateway } from '../support/stack';
import { keyIdByName, nonce, usageRowFor } from '../support/text';

const HEADERS_TIMEOUT_MS = 1500;
const REQUEST_TIMEOUT_MS = 3000;
const MAX_CONNECTIONS = 24;
const MAX_JSON_BODY_BYTES = 1024 * 1024;
const SEND_STALL_MS = 2000;
// Shorter than the stall bound: a relay that took its paused time for the upstream's silence would cut first.
const STREAM_IDLE_MS = 1500;

let gw: Gateway;
let key: string;
let port: number;

beforeAll(async () => {
  gw = await startGateway({
    noWorker: true,
    env: {
      HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      HTTP_MAX_CONNECTIONS: String(MAX_CONNECTIONS),
      MAX_JSON_BODY_BYTES: String(MAX_JSON_BODY_BYTES),
      HTTP_SEND_STALL_MS: String(SEND_STALL_MS),
      TEXT_STREAM_IDLE_MS: String(STREAM_IDLE_MS),
    },
  });
  key = await gw.issueKey('edge-http');
  port = Number(new URL(gw.url).port);
}, 120_000);

afterAll(async () => {
  await gw?.stop();
}, 120_000);

/** A socket that writes `first`, then `drip` every `everyMs` until the server closes it; what it read and when it closed. */
function drip(first: string, drip: string, everyMs: number, giveUpMs: number): Promise<{ closedAfterMs: number | null; received: string }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    let timer: NodeJS.Timeout | undefined;
    const done = (closed: boolean) => {
      clearInterval(timer);
      clearTimeout(giveUp);
      socket.destroy();
      resolve({ closedAfterMs: closed ? Date.now() - started : null, received });
    };
    const giveUp = setTimeout(() => done(false), giveUpMs);
    socket.on('connect', () => {
      socket.write(first);
      timer = setInterval(() => {
        if (!socket.destroyed) socket.write(drip, () => undefined);
      }, everyMs);
    });
    socket.on('data', (d) => (received += d.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => done(true));
  });
}

test('a client dripping its headers (slowloris) gets 408 and is cut off; others are served meanwhile', async () => {
  const slow = drip('GET /v1/models HTTP/1.1\r\nHost: x\r\n', 'X-Drip: y\r\n', 200, 20_000);
  const served = await call(`${gw.url}/v1/models`, { key });
  expect(served.status).toBe(200);
  const { closedAfterMs, received } = await slow;
  // Cut after the headers deadline (checked every second), long before the 20 s give-up.
  expect(closedAfterMs).not.toBeNull();
  expect(closedAfterMs!).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 100);
  expect(received).toMatch(/^HTTP\/1\.1 408/);
}, 30_000);

test('a client dripping its body is cut off at the request deadline', async () => {
  const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"model":"gpt-4o-mini","messages":[`;
  const { closedAfterMs } = await drip(head, ' ', 200, 20_000);
  expect(closedAfterMs).not.toBeNull();
  expect(closedAfterMs!).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 100);
}, 30_000);

test('a chunked body that goes on past MAX_JSON_BODY_BYTES gets 413; the rest is not read, and the request deadline closes the connection', async () => {
  const started = Date.now();
  const { status, closed } = await new Promise<{ status: string; closed: boolean }>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let received = '';
    let timer: NodeJS.Timeout | undefined;
    const giveUp = setTimeout(() => finish(false), 10_000);
    const finish = (closed: boolean) => {
      clearInterval(timer);
      clearTimeout(giveUp);
      socket.destroy();
      resolve({ status: received.split('\r\n')[0] ?? '', closed });
    };
    socket.on('connect', () => {
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
      );
      // Twice the limit a second, for as long as the server reads it.
      timer = setInterval(() => {
        for (let i = 0; i < 4 && !socket.destroyed; i++)
          socket.write(Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]));
      }, 100);
    });
    socket.on('data', (d) => (received += d.toString('latin1')));
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
  });
  expect(status).toBe('HTTP/1.1 413 Payload Too Large');
  expect(closed).toBe(true);
  // Closed by the request deadline (checked every second), long before the 10 s give-up.
  expect(Date.now() - started).toBeLessThan(REQUEST_TIMEOUT_MS + 3000);
}, 30_000);

test('a stream that lasts longer than the request deadline is not cut', async () => {
  // Ten words, each its own event, 600 ms apart: about 6 s of stream after a request received at once.
  const prompt = 'one two three four five six seven eight nine ten [sim:delay=600]';
  const started = Date.now();
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: prompt }] }),
  });
  expect(res.status).toBe(200);
  const text = await res.text();
  expect(Date.now() - started).toBeGreaterThan(REQUEST_TIMEOUT_MS);
  expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
}, 30_000);

test('a slow upstream answer (headers after the request deadline) is not cut either', async () => {
  const res = await call(`${gw.url}/v1/chat/completions`, {
    key,
    json: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `hello [sim:slow=${REQUEST_TIMEOUT_MS + 1500}]` }] },
  });
  expect(res.status).toBe(200);
}, 30_000);

/**
 * A streamed chat completion of a `[sim:long]` answer on a bare socket whose reading the test
 * steers: `read(socket)` is called with the socket paused once the first bytes arrived. Resolves
 * with everything received when the server ends the connection.
 */
function longStream(kib: number, requestId: string, read: (socket: net.Socket) => void): Promise<string> {
  // The gateway's default output cap (TEXT_DEFAULT_MAX_TOKENS) would cut the answer short: room for it, at the simulator's 4 characters a token.
  const body = JSON.stringify({
    model: 'gpt-4o-mini',
    stream: true,
    max_tokens: kib * 256,
    messages: [{ role: 'user', content: `a long one ${requestId} [sim:long=${kib}]` }],
  });
  const request = buildRequest(
    'POST',
    '/v1/chat/completions',
    [
      ['Host', 'x'],
      ['Authorization', `Bearer ${key}`],
      ['Content-Type', 'application/json'],
      ['Content-Length', String(Buffer.byteLength(body))],
      ['X-Request-Id', requestId],
      ['Connection', 'close'],
    ],
    body,
  );
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      if (chunks.length > 1) return;
      socket.pause();
      read(socket);
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
}

/** The body of a chunked HTTP/1.1 answer, as far as it came. */
function dechunked(answer: string): string {
  let at = answer.indexOf('\r\n\r\n') + 4;
  let body = '';
  for (;;) {
    const eol = answer.indexOf('\r\n', at);
    const size = eol < 0 ? NaN : parseInt(answer.slice(at, eol), 16);
    if (!(size > 0)) return body;
    body += answer.slice(eol + 2, eol + 2 + size);
    at = eol + 2 + size + 2;
  }
}

test('a client that stops reading a long stream is closed after HTTP_SEND_STALL_MS, billed as aborted, not blamed on the upstream', async () => {
  const requestId = `req-stalled-${nonce()}`;
  const keyId = await keyIdByName(gw.url, 'edge-http');
  let cutAfterMs = 0;
  // 32 MiB: more than the kernel's buffers on both sides hold, so the gateway has bytes waiting.
  const received = await longStream(32 * 1024, requestId, (socket) => {
    const pausedAt = Date.now();
    // The gateway settles the answer as it closes the connection: the usage row tells when.
    void usageRowFor(gw.url, keyId, requestId, 30_000)
      .then((row) => {
        cutAfterMs = Date.now() - pausedAt;
        expect(row).toMatchObject({ streamed: true, outcome: 'aborted' });
      })
      .finally(() => socket.resume());
  });
  // Cut once nothing had left for the bound (seen by a sweep every quarter of it), not earlier.
  expect(cutAfterMs).toBeGreaterThanOrEqual(SEND_STALL_MS);
  expect(cutAfterMs).toBeLessThan(SEND_STALL_MS * 1.25 + 3000);
  // Read on, the client gets what its buffers held, then the end: no error event blaming the upstream, no [DONE].
  expect(received).toMatch(/^HTTP\/1\.1 200/);
  expect(dechunked(received)).not.toContain('sent nothing');
  expect(dechunked(received)).not.toContain('data: [DONE]');
  expect(received.length).toBeLessThan(32 * 1024 * 1024);
  const log = fs.readFileSync(path.join(TEST_DATA, `${path.basename(gw.dataDir)}-api.log`), 'utf8');
  expect(log).toContain('read nothing of its answer for HTTP_SEND_STALL_MS; connection closed');
}, 60_000);

test('a client that reads a long stream slowly, in bursts further apart than the idle bound, gets all of it', async () => {
  const requestId = `req-slow-reader-${nonce()}`;
  let bursts = 0;
  const started = Date.now();
  const received = await longStream(16 * 1024, requestId, (socket) => {
    // Read for 40 ms every 1.8 s: some progress within every HTTP_SEND_STALL_MS (2 s), and pauses
    // longer than TEXT_STREAM_IDLE_MS (1.5 s), which would end the stream were they counted as the upstream's silence.
    const timer = setInterval(() => {
      bursts++;
      socket.resume();
      setTimeout(() => socket.pause(), 40);
    }, 1800);
    socket.once('close', () => clearInterval(timer));
  });
  expect(dechunked(received).trimEnd().endsWith('data: [DONE]')).toBe(true);
  // It did take pauses longer than the stream's idle bound, and longer than the stall bound in all.
  expect(bursts).toBeGreaterThanOrEqual(2);
  expect(Date.now() - started).toBeGreaterThan(SEND_STALL_MS);
  const keyId = await keyIdByName(gw.url, 'edge-http');
  expect(await usageRowFor(gw.url, keyId, requestId)).toMatchObject({ streamed: true, outcome: 'completed' });
}, 120_000);

/** A kept-alive connection that has been served once; null when the server refused it. */
async function openServed(): Promise<net.Socket | null> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  return new Promise((resolve) => {
    let got = '';
    let settled = false;
    const finish = (ok: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.removeAllListeners('data');
      socket.removeAllListeners('close');
      resolve(ok ? socket : null);
      if (!ok) socket.destroy();
    };
    socket.on('connect', () => socket.write('GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n'));
    socket.on('data', (d) => {
      got += d.toString('latin1');
      if (got.includes('\r\n\r\n') && got.includes('unknown_route')) finish(true);
    });
    socket.on('close', () => finish(false));
    const timer = setTimeout(() => finish(false), 10_000);
  });
}

/** One more request on an open connection; its status. */
function again(socket: net.Socket): Promise<number | null> {
  return new Promise((resolve) => {
    let got = '';
    const timer = setTimeout(() => resolve(null), 10_000);
    socket.on('data', (d) => {
      got += d.toString('latin1');
      const match = /^HTTP\/1\.1 (\d{3})/.exec(got);
      if (match && got.includes('unknown_route')) {
        clearTimeout(timer);
        socket.removeAllListeners('data');
        resolve(Number(match[1]));
      }
    });
    socket.write('GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n');
  });
}

test('connections over HTTP_MAX_CONNECTIONS are refused at accept; the open ones keep working', async () => {
  const open: net.Socket[] = [];
  let refused = 0;
  // This process may hold a few pooled connections of its own: open until the server refuses.
  for (let i = 0; i < MAX_CONNECTIONS + 10 && refused === 0; i++) {
    const socket = await openServed();
    if (socket) open.push(socket);
    else refused++;
  }
  try {
    expect(refused).toBe(1);
    expect(open.length).toBeLessThanOrEqual(MAX_CONNECTIONS);
    // Every connection that was in is still served.
    expect(await Promise.all(open.map(again))).toEqual(open.map(() => 404));
    // A freed slot is usable again.
    open.pop()!.destroy();
    await new Promise((r) => setTimeout(r, 200));
    const next = await openServed();
    expect(next).not.toBeNull();
    next?.destroy();
  } finally {
    for (const s of open) s.destroy();
    // The server counts a socket as gone only when it sees the close: wait for that, so that the
    // next test's connection is not refused as one over the limit.
    for (let i = 0; i < 50; i++) {
      const probe = await openServed();
      if (probe) {
        probe.destroy();
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}, 60_000);

test('a request line and headers over HTTP_MAX_HEADER_BYTES get 431', async () => {
  const res = await rawRequest(
    port,
    buildRequest('GET', '/v1/models', [
      ['Host', 'x'],
      ['X-Big', 'a'.repeat(20_000)],
      ['Connection', 'close'],
    ]),
  );
  expect(res.status).toBe(431);
});

test('clients cut off or gone are not logged as unhandled errors', () => {
  const log = fs.readFileSync(path.join(TEST_DATA, `${path.basename(gw.dataDir)}-api.log`), 'utf8');
  expect(log).toContain('"status":400'); // the dripped body, answered (to nobody) as incomplete
  expect(log).not.toContain('unhandled error');
});

// This gateway runs no worker on a Temporal that answers: its detailed health says so.
test('/healthz is 503 while Temporal answers but no worker polls the task queue', async () => {
  const res = await call<{ status: string; temporal: string; worker: string }>(`${gw.url}/healthz`);
  expect(res.status).toBe(503);
  expect(res.body).toMatchObject({ status: 'unavailable', temporal: 'ok' });
  expect(res.body.worker).toMatch(/no worker is polling/);
});

// Last in this file: the tests above need a gateway with no worker, this one a finished task.
test('a client that stops reading a large video download is closed after HTTP_SEND_STALL_MS', async () => {
  await gw.startWorker();
  const created = await createTask(gw.url, key, { model: 'vidgen3', prompt: `a long film ${nonce()} [sim:video-kib=32768] [sim:ms=300]` });
  const { final } = await waitForTerminal(gw.url, key, created.id, 90_000);
  expect(final.status).toBe('completed');
  const video = new URL(final.video_url ?? '');
  const logFile = path.join(TEST_DATA, `${path.basename(gw.dataDir)}-api.log`);
  const stalls = () => fs.readFileSync(logFile, 'utf8').split('read nothing of its answer for HTTP_SEND_STALL_MS; connection closed').length - 1;
  const before = stalls();
  let cutAfterMs = 0;
  const received = await new Promise<Buffer>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () =>
      socket.write(
        buildRequest('GET', `${video.pathname}${video.search}`, [
          ['Host', 'x'],
          ['Connection', 'close'],
        ]),
      ),
    );
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      if (chunks.length > 1) return;
      socket.pause();
      const pausedAt = Date.now();
      // The gateway logs the close of a stalled reader: that says when.
      void waitFor('the stalled download closed', async () => stalls() > before, 30_000, 50)
        .then(() => (cutAfterMs = Date.now() - pausedAt))
        .finally(() => socket.resume());
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks)));
  });
  expect(cutAfterMs).toBeGreaterThanOrEqual(SEND_STALL_MS);
  expect(cutAfterMs).toBeLessThan(SEND_STALL_MS * 1.25 + 3000);
  const head = received.subarray(0, received.indexOf('\r\n\r\n')).toString('latin1');
  expect(head).toMatch(/^HTTP\/1\.1 200/);
  expect(head.toLowerCase()).toContain(`content-length: ${32 * 1024 * 1024}`);
  // What the buffers held, not the whole file.
  expect(received.length).toBeLessThan(32 * 1024 * 1024);
}, 120_000);
