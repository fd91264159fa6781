/**
 * The polls' GET (getUpstreamJson on node:http, keep-alive.ts) against a real local server that
 * answers, refuses, stalls, redirects and resets: every way it ends is one that upstreamFetch
 * and readJson would give the workflow (retryable or rejected, with the provider's reason).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { getUpstreamJson } from '../../src/providers/http';
import { upstreamFailure } from '../support/upstream-failure';

const shape = z.object({ id: z.string(), progress: z.number() });

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;
const routes = new Map<string, Handler>();
let server: http.Server;
let base: string;
let other: http.Server;
let otherBase: string;
const sockets = new Set<import('node:net').Socket>();

function listen(s: http.Server): Promise<string> {
  return new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(s.address() as AddressInfo).port}`)));
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const handler = routes.get(req.url ?? '');
    if (handler) handler(req, res);
    else res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"no such job"}}');
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  base = await listen(server);
  other = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"elsewhere","progress":1}'));
  otherBase = await listen(other);
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => server.close(r));
  await new Promise((r) => other.close(r));
});

const json =
  (body: unknown, status = 200, headers: Record<string, string> = {}): Handler =>
  (_req, res) =>
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));

const get = (path: string, timeoutMs = 2000) => getUpstreamJson('job poll', `${base}${path}`, { authorization: 'Bearer k' }, timeoutMs, 'test-channel', shape);

test('a 2xx answer is parsed by its schema, with the request headers sent', async () => {
  let auth: string | undefined;
  routes.set('/ok', (req, res) => {
    auth = req.headers.authorization;
    json({ id: 'job-1', progress: 40, extra: true })(req, res);
  });
  await expect(get('/ok')).resolves.toEqual({ id: 'job-1', progress: 40 });
  expect(auth).toBe('Bearer k');
});

test('a 4xx is rejected with the provider reason; a 429 or 5xx is retryable with its Retry-After', async () => {
  expect(await upstreamFailure(get('/missing'))).toMatchObject({ kind: 'rejected', status: 404, message: 'job poll: HTTP 404: no such job' });
  routes.set('/busy', json({ error: { message: 'slow down' } }, 429, { 'retry-after': '7' }));
  expect(await upstreamFailure(get('/busy'))).toMatchObject({ kind: 'retryable', status: 429, retryAfterMs: 7000, message: 'job poll: HTTP 429: slow down' });
  routes.set('/down', (_req, res) => res.writeHead(503).end('upstream is down'));
  expect(await upstreamFailure(get('/down'))).toMatchObject({ kind: 'retryable', status: 503, message: 'job poll: HTTP 503: upstream is down' });
});

test('an answer that is not JSON, or not of the shape, is retryable', async () => {
  routes.set('/html', (_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>maintenance</html>'));
  expect(await upstreamFailure(get('/html'))).toMatchObject({ kind: 'retryable', status: 200, message: 'job poll: response is not JSON' });
  routes.set('/odd', json({ id: 3 }));
  expect((await upstreamFailure(get('/odd'))).message).toMatch(/^job poll: unexpected response shape/);
});

test('the deadline covers the whole answer: a stall before the headers or inside the body fails as a timeout', async () => {
  routes.set('/silent', () => undefined);
  expect(await upstreamFailure(get('/silent', 300))).toMatchObject({
    kind: 'retryable',
    networkCode: 'TimeoutError',
    message: 'job poll: connection failed (TimeoutError)',
  });
  routes.set('/half', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"id":"job-1",');
  });
  expect(await upstreamFailure(get('/half', 300))).toMatchObject({ kind: 'retryable', networkCode: 'TimeoutError' });
});

test('an answer past the size limit (4 MiB unless the caller sets it) is cut off, not buffered', async () => {
  routes.set('/huge', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    for (let i = 0; i < 8; i++) res.write(chunk);
    res.end('{}');
  });
  expect(await upstreamFailure(get('/huge'))).toMatchObject({ kind: 'retryable', networkCode: 'TooLarge' });
  // A caller that expects more (a response object with generated images) raises the limit: read whole, then judged by its shape.
  const roomy = getUpstreamJson('job poll', `${base}/huge`, {}, 2000, 'test-channel', shape, { maxBytes: 16 * 1024 * 1024 });
  expect((await upstreamFailure(roomy)).message).toMatch(/^job poll: unexpected response shape/);
});

test('a redirect within the origin is followed; one to another origin is not, and is refused', async () => {
  routes.set('/moved', (_req, res) => res.writeHead(302, { location: '/ok' }).end());
  await expect(get('/moved')).resolves.toEqual({ id: 'job-1', progress: 40 });
  routes.set('/away', (_req, res) => res.writeHead(302, { location: `${otherBase}/job` }).end());
  expect(await upstreamFailure(get('/away'))).toMatchObject({ kind: 'rejected', status: 302 });
  routes.set('/loop', (_req, res) => res.writeHead(302, { location: '/loop' }).end());
  expect(await upstreamFailure(get('/loop'))).toMatchObject({ kind: 'rejected', status: 302 });
});

test('no server: a retryable connection failure with its code', async () => {
  const closed = http.createServer();
  const url = await listen(closed);
  await new Promise((r) => closed.close(r));
  const err = await upstreamFailure(getUpstreamJson('job poll', `${url}/x`, {}, 2000, 'test-channel', shape));
  expect(err).toMatchObject({ kind: 'retryable', networkCode: 'ECONNREFUSED' });
});

test('a kept-alive socket that the upstream resets as the request arrives is asked again on a fresh one', async () => {
  // Each connection answers its first request and resets on its second, as an upstream that
  // closed an idle keep-alive connection the moment the next request went out on it.
  const served = new WeakMap<import('node:net').Socket, number>();
  routes.set('/once-per-socket', (req, res) => {
    const n = (served.get(req.socket) ?? 0) + 1;
    served.set(req.socket, n);
    if (n > 1) req.socket.destroy();
    else json({ id: 'job-1', progress: n })(req, res);
  });
  await expect(get('/once-per-socket')).resolves.toEqual({ id: 'job-1', progress: 1 });
  await expect(get('/once-per-socket')).resolves.toEqual({ id: 'job-1', progress: 1 });
});
