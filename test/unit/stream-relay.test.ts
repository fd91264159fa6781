/**
 * The text proxy's stream relay (src/proxy/text-proxy.ts relay): a client that reads slowly
 * holds the upstream back (backpressure) instead of the gateway buffering the whole answer,
 * and once it reads, everything arrives in order and the stream ends properly. What arrives in
 * one turn goes out in one write; what arrives with the upstream's end goes out with the
 * client's end, after the settlement.
 */
import http, { type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { relay, type StreamSink } from '../../src/proxy/text-proxy';
import { MessagesStreamTap } from '../../src/providers/anthropic/mapping';
import { MAX_SSE_EVENT_CHARS } from '../../src/providers/sse-events';

const tick = () => new Promise((r) => setImmediate(r));

const start = Buffer.from('event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":7}}}\n\n');
const delta = Buffer.from('event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"type":"text_delta","text":"Hi"}}\n\n');
const stop = Buffer.from('event: message_stop\ndata: {"type":"message_stop"}\n\n');

/** A client's response that records what reaches it, call by call. */
class RecordingSink implements StreamSink {
  destroyed = false;
  calls: string[] = [];
  private readonly listeners = new Map<string, () => void>();
  write(chunk: Buffer | string): boolean {
    this.calls.push(`write ${chunk.toString()}`);
    return true;
  }
  end(chunk?: Buffer | string): void {
    this.calls.push(`end ${chunk?.toString() ?? ''}`);
  }
  cork(): void {
    this.calls.push('cork');
  }
  uncork(): void {
    this.calls.push('uncork');
  }
  once(event: 'drain' | 'close', listener: () => void): void {
    this.listeners.set(event, listener);
  }
  close(): void {
    this.destroyed = true;
    this.listeners.get('close')?.();
  }
}

/** onDone that resolves when the test says so. */
function settlement() {
  const outcomes: string[] = [];
  let release = () => {};
  const settled = new Promise<void>((r) => (release = r));
  return { outcomes, release, onDone: (o: string) => (outcomes.push(o), settled) };
}

/** A relay of an upstream the test writes to, billed when the test releases its settlement. */
function relayed(idleMs = 60_000) {
  const upstream = new PassThrough();
  const billing = settlement();
  const answer = relay(upstream as unknown as IncomingMessage, start, new MessagesStreamTap(), idleMs, new AbortController().signal, billing.onDone);
  return { upstream, billing, answer };
}

test('a client that does not read pauses the upstream; reading resumes it and nothing is lost', async () => {
  const upstream = new PassThrough();
  const outcomes: string[] = [];
  const answer = relay(upstream as unknown as IncomingMessage, start, new MessagesStreamTap(), 60_000, new AbortController().signal, async (o) => {
    outcomes.push(o);
  });
  const client = new PassThrough();
  answer.sendTo(client);
  const chunk = Buffer.from(`event: ping\ndata: {"type":"ping","pad":"${'x'.repeat(16_000)}"}\n\n`);
  for (let i = 0; i < 64; i++) upstream.write(chunk);
  for (let i = 0; i < 4; i++) await tick();

  // Nobody reads the client's side: the relay stopped reading the upstream, whose data waits there.
  expect(upstream.isPaused()).toBe(true);
  expect(client.readableLength + client.writableLength).toBeLessThan(8 * chunk.length);
  expect(upstream.readableLength + upstream.writableLength).toBeGreaterThan(50 * chunk.length);

  upstream.end(stop);
  const received: Buffer[] = [];
  for await (const piece of client) received.push(piece as Buffer);
  expect(Buffer.concat(received).equals(Buffer.concat([start, ...Array.from({ length: 64 }, () => chunk), stop]))).toBe(true);
  expect(outcomes).toEqual(['completed']);
});

test("the idle bound counts the upstream's silence only: time paused for a client that does not read is not it", async () => {
  const IDLE_MS = 100;
  const { upstream, billing, answer } = relayed(IDLE_MS);
  const client = new PassThrough({ highWaterMark: 1024 });
  answer.sendTo(client);
  upstream.write(Buffer.from(`event: ping\ndata: {"type":"ping","pad":"${'x'.repeat(20_000)}"}\n\n`));
  for (let i = 0; i < 4; i++) await tick();
  expect(upstream.isPaused()).toBe(true);

  // Paused for the client four times the idle bound: not cut, nothing blamed on the upstream.
  await new Promise((r) => setTimeout(r, 4 * IDLE_MS));
  expect(billing.outcomes).toEqual([]);
  expect(upstream.destroyed).toBe(false);

  // The client reads: the upstream is read again, and its own silence from then on is bounded.
  const received: Buffer[] = [];
  client.on('data', (piece: Buffer) => received.push(piece));
  await new Promise((r) => setTimeout(r, 3 * IDLE_MS));
  expect(billing.outcomes).toEqual(['failed']);
  expect(upstream.destroyed).toBe(true);
  billing.release();
  await new Promise((r) => client.once('end', r));
  expect(Buffer.concat(received).toString()).toMatch(/The upstream sent nothing for 0 s; the stream was ended\.[^]*$/);
});

test('an upstream whose event never ends is cut past MAX_SSE_EVENT_CHARS with an error event, billed as failed', async () => {
  const { upstream, billing, answer } = relayed();
  const client = new PassThrough();
  const received: Buffer[] = [];
  client.on('data', (piece: Buffer) => received.push(piece));
  answer.sendTo(client);
  const mib = Buffer.from('x'.repeat(1024 * 1024));
  upstream.write('event: content_block_delta\ndata: ');
  for (let i = 0; i <= MAX_SSE_EVENT_CHARS / mib.length && !upstream.destroyed; i++) {
    upstream.write(mib);
    await tick();
  }
  expect(upstream.destroyed).toBe(true);
  expect(billing.outcomes).toEqual(['failed']);
  billing.release();
  await new Promise((r) => client.once('end', r));
  expect(Buffer.concat(received).toString().slice(-300)).toMatch(/event: error\ndata: .*an event of more than 32 MiB; the stream was ended/);
});

test('an answer that came whole reaches the client after its settlement, in one write with its end', async () => {
  const { upstream, billing, answer } = relayed();
  upstream.end(Buffer.concat([delta, stop]));
  const client = new RecordingSink();
  answer.sendTo(client);
  for (let i = 0; i < 4; i++) await tick();

  expect(billing.outcomes).toEqual(['completed']);
  expect(client.calls).toEqual([]);
  billing.release();
  await tick();
  expect(client.calls).toEqual(['cork', `write ${start}`, `end ${Buffer.concat([delta, stop])}`]);
});

test('what arrives while the answer runs goes out in the same turn, one write per turn', async () => {
  const { upstream, billing, answer } = relayed();
  const client = new RecordingSink();
  answer.sendTo(client);
  await tick();
  expect(client.calls).toEqual(['cork', `write ${start}`, 'uncork']);

  upstream.write(delta);
  upstream.write(delta);
  await tick();
  await tick();
  expect(client.calls.slice(3)).toEqual(['cork', `write ${delta}`, `write ${delta}`, 'uncork']);

  // The end waits for the settlement; the stop event came with it.
  upstream.end(stop);
  await tick();
  await tick();
  expect(client.calls.slice(7)).toEqual([]);
  billing.release();
  await tick();
  expect(client.calls.slice(7)).toEqual([`end ${stop}`]);
});

test('a client that leaves mid-answer drops the upstream, and the answer is billed as aborted', async () => {
  const { upstream, billing, answer } = relayed();
  const client = new RecordingSink();
  answer.sendTo(client);
  upstream.write(delta);
  await tick();
  client.close();
  expect(upstream.destroyed).toBe(true);
  expect(billing.outcomes).toEqual(['aborted']);
  billing.release();
  await tick();
  expect(client.calls.some((c) => c.startsWith('end'))).toBe(false);
});

test('an answer abandoned before it was sent is billed as aborted and its upstream dropped', async () => {
  const { upstream, billing, answer } = relayed();
  answer.abandon();
  expect(upstream.destroyed).toBe(true);
  expect(billing.outcomes).toEqual(['aborted']);
});

test('to a real response, a client that stops reading pauses the upstream, and the gateway holds little of the answer', async () => {
  const { upstream, billing, answer } = relayed();
  let response: http.ServerResponse | null = null;
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    response = res;
    answer.sendTo(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const { port } = server.address() as AddressInfo;
    const client = await new Promise<IncomingMessage>((resolve) => http.get({ port, host: '127.0.0.1', path: '/' }, resolve));
    client.pause();

    // The socket's kernel buffers take some megabytes; past them the upstream must stop being read.
    const chunk = Buffer.from(`event: ping\ndata: {"type":"ping","pad":"${'x'.repeat(64 * 1024)}"}\n\n`);
    let sent = 0;
    while (!upstream.isPaused() && sent < 256) {
      upstream.write(chunk);
      sent++;
      await tick();
    }
    expect(upstream.isPaused()).toBe(true);
    // What the gateway holds in memory for the client: at most a turn's reading beyond the response's high-water mark.
    expect(response!.writableLength).toBeLessThan(4 * chunk.length);

    upstream.end(stop);
    billing.release();
    const received: Buffer[] = [];
    client.on('data', (piece: Buffer) => received.push(piece));
    client.resume();
    await new Promise((r) => client.once('end', r));
    expect(Buffer.concat(received).equals(Buffer.concat([start, ...Array.from({ length: sent }, () => chunk), stop]))).toBe(true);
    expect(billing.outcomes).toEqual(['completed']);
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});
