/**
 * The text proxy's upstream POST (src/providers/text-http.ts): headers go out as given, with the
 * Host of the URL (IPv6 and credentials included) and the body's length; a header value that
 * could split the request is refused before anything is sent. The pool's sockets
 * (src/providers/keep-alive.ts): a server's Keep-Alive hint is honoured, a quiet stream is not
 * cut, and a request on a socket the upstream closed is sent again.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { againIfStale, UpstreamConnectionError } from '../../src/providers/keep-alive';
import { postText, readAll } from '../../src/providers/text-http';

interface Seen {
  host: string | undefined;
  headers: http.IncomingHttpHeaders;
  body: string;
}

async function server(host: string): Promise<{ port: number; seen: Seen[]; close: () => Promise<void> }> {
  const seen: Seen[] = [];
  const srv = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ host: req.headers.host, headers: req.headers, body });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, host, resolve));
  return { port: (srv.address() as AddressInfo).port, seen, close: () => new Promise((r) => srv.close(() => r())) };
}

const post = (url: string, headers: Record<string, string>) =>
  postText({ url, headers, body: Buffer.from('{"a":1}'), timeoutMs: 5000, channel: 'test' }).then((res) => readAll(res, 5000));

test('headers, Host and Content-Length as the provider expects them, on IPv4 and IPv6', async () => {
  for (const host of ['127.0.0.1', '::1']) {
    const s = await server(host);
    const hostPart = host.includes(':') ? `[${host}]` : host;
    const body = await post(`http://${hostPart}:${s.port}/v1/chat/completions?x=1`, { authorization: 'Bearer sk-up', 'x-custom': 'yes' });
    expect(body.toString()).toBe('{"ok":true}');
    expect(s.seen[0]).toMatchObject({ host: `${hostPart}:${s.port}`, body: '{"a":1}' });
    expect(s.seen[0].headers).toMatchObject({ authorization: 'Bearer sk-up', 'x-custom': 'yes', 'content-length': '7', connection: 'keep-alive' });
    await s.close();
  }
});

test('a URL with credentials sends them as Basic authorization, unless the headers carry one', async () => {
  const s = await server('127.0.0.1');
  await post(`http://user:pass@127.0.0.1:${s.port}/v1/messages`, { 'x-api-key': 'k' });
  expect(s.seen[0].headers.authorization).toBe(`Basic ${Buffer.from('user:pass').toString('base64')}`);
  expect(s.seen[0].headers['x-api-key']).toBe('k');
  // Percent-encoded credentials are decoded first; an authorization header of the channel's own wins.
  await post(`http://us%40er:p%3Ass@127.0.0.1:${s.port}/v1/messages`, {});
  expect(s.seen[1].headers.authorization).toBe(`Basic ${Buffer.from('us@er:p:ss').toString('base64')}`);
  await post(`http://user:pass@127.0.0.1:${s.port}/v1/messages`, { authorization: 'Bearer sk-up' });
  expect(s.seen[2].headers.authorization).toBe('Bearer sk-up');
  await s.close();
});

test('a header value with a line break is refused and nothing reaches the provider', async () => {
  const s = await server('127.0.0.1');
  await expect(post(`http://127.0.0.1:${s.port}/v1/messages`, { 'anthropic-beta': 'a\r\nx-injected: 1' })).rejects.toThrow();
  expect(s.seen).toEqual([]);
  await s.close();
});

test("a socket is not reused past the server's Keep-Alive hint (less a second), and a stream quiet for longer than that still ends", async () => {
  let connections = 0;
  const srv = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'keep-alive': 'timeout=2' });
      res.write('data: 1\n\n');
      // Quiet for longer than the socket's idle time in the pool (the hint less a second).
      setTimeout(() => res.end('data: 2\n\n'), 1500);
    });
  });
  srv.on('connection', () => connections++);
  srv.keepAliveTimeout = 60_000; // The server would keep it: only the hint can close it.
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/v1/chat/completions`;
  try {
    expect((await post(url, {})).toString()).toBe('data: 1\n\ndata: 2\n\n');
    expect((await post(url, {})).toString()).toBe('data: 1\n\ndata: 2\n\n');
    expect(connections).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 1300));
    expect((await post(url, {})).toString()).toBe('data: 1\n\ndata: 2\n\n');
    expect(connections).toBe(2);
  } finally {
    srv.closeAllConnections();
    await new Promise<void>((resolve) => srv.close(() => resolve()));
  }
});

test.each(['ECONNRESET', 'EPIPE'])(
  'a request that failed with %s on a kept-alive socket is sent once more; on a fresh socket, or no longer wanted, it is not',
  async (code) => {
    const failingOnce = () => {
      let calls = 0;
      const send = async (reused: boolean) => {
        if (++calls === 1) throw new UpstreamConnectionError(code, reused);
        return 'answered';
      };
      return { send, calls: () => calls };
    };
    const stale = failingOnce();
    await expect(againIfStale(() => stale.send(true))).resolves.toBe('answered');
    expect(stale.calls()).toBe(2);
    const fresh = failingOnce();
    await expect(againIfStale(() => fresh.send(false))).rejects.toMatchObject({ code });
    expect(fresh.calls()).toBe(1);
    const gone = failingOnce();
    await expect(
      againIfStale(
        () => gone.send(true),
        () => false,
      ),
    ).rejects.toMatchObject({ code });
    expect(gone.calls()).toBe(1);
  },
);
