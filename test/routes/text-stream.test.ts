/**
 * A streamed text answer as the route sends it (sendStream in text-proxy-route.ts, past Koa's
 * own stream plumbing), in process against a scripted upstream: the client gets the upstream's
 * events as they come, with the upstream's content type, and a client that leaves mid-stream
 * closes the upstream request at once rather than when the upstream finishes (the request's
 * abort and sendStream's close handler each do; without both the upstream runs to its end).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startRouteApp, type RouteApp } from './harness';

/** What the scripted upstream saw of the last streamed request. */
interface Seen {
  closedEarly: Promise<boolean>;
}

let upstream: http.Server;
let app: RouteApp;
let key: string;
let seen: Seen | null = null;
/** Events the upstream sends, one every EVENT_MS; the stream lasts EVENTS * EVENT_MS unless the client leaves. */
const EVENTS = 100;
const EVENT_MS = 50;

function anthropicEvent(type: string, data: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
    res.write(
      anthropicEvent('message_start', {
        message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'cm', content: [], usage: { input_tokens: 5, output_tokens: 0 } },
      }),
    );
    res.write(anthropicEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }));
    let sent = 0;
    const timer = setInterval(() => {
      if (++sent <= EVENTS) {
        res.write(anthropicEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: `word${sent} ` } }));
        return;
      }
      clearInterval(timer);
      res.write(anthropicEvent('content_block_stop', { index: 0 }));
      res.write(anthropicEvent('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: EVENTS } }));
      res.end(anthropicEvent('message_stop', {}));
    }, EVENT_MS);
    seen = {
      closedEarly: new Promise((resolve) =>
        res.once('close', () => {
          clearInterval(timer);
          resolve(sent < EVENTS);
        }),
      ),
    };
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  app = await startRouteApp({ SIMULATOR_URL: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}` });
  key = await app.issueKey(10_000_000);
}, 60_000);

afterAll(async () => {
  await app?.close();
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
});

/** POSTs a streamed messages request with node:http, so that the test owns the socket. */
function streamRequest(): Promise<http.IncomingMessage> {
  const body = JSON.stringify({ model: 'cm-haiku-4.5', max_tokens: 200, stream: true, messages: [{ role: 'user', content: 'stream to me' }] });
  return new Promise((resolve, reject) => {
    const req = http.request(`${app.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' } }, resolve);
    req.once('error', reject);
    req.end(body);
  });
}

test('a stream reaches the client event by event, with the upstream content type, to its end', async () => {
  const res = await streamRequest();
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
  let text = '';
  let firstAt = 0;
  const started = Date.now();
  for await (const chunk of res) {
    if (!firstAt) firstAt = Date.now();
    text += (chunk as Buffer).toString('utf8');
  }
  // Relayed as it came, not gathered: the first bytes arrived long before the last.
  expect(firstAt - started).toBeLessThan((EVENTS * EVENT_MS) / 2);
  expect(text).toContain('word1 ');
  expect(text).toContain(`word${EVENTS} `);
  expect(text.trimEnd().endsWith('"type":"message_stop"}')).toBe(true);
  expect(await seen?.closedEarly).toBe(false);
});

test('a client that leaves mid-stream closes the upstream request at once', async () => {
  const res = await streamRequest();
  expect(res.statusCode).toBe(200);
  await new Promise<void>((resolve) => res.once('data', () => resolve()));
  const leftAt = Date.now();
  res.destroy();
  const closedEarly = await seen?.closedEarly;
  expect(closedEarly).toBe(true);
  // Far sooner than the rest of the stream (about 5 s) would have taken.
  expect(Date.now() - leftAt).toBeLessThan(2000);
});
