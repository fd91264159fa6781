/**
 * The text proxy's stream relay (src/proxy/text-proxy.ts relay): a client that reads slowly
 * holds the upstream back (backpressure) instead of the gateway buffering the whole answer,
 * and once it reads, everything arrives in order and the stream ends properly.
 */
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { relay } from '../../src/proxy/text-proxy';
import { MessagesStreamTap } from '../../src/providers/anthropic/mapping';

const tick = () => new Promise((r) => setImmediate(r));

test('a client that does not read pauses the upstream; reading resumes it and nothing is lost', async () => {
  const upstream = new PassThrough();
  const outcomes: string[] = [];
  const first = Buffer.from('event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":7}}}\n\n');
  const out = relay(upstream as unknown as IncomingMessage, first, new MessagesStreamTap(), 60_000, new AbortController().signal, async (o) => {
    outcomes.push(o);
  });
  const chunk = Buffer.from(`event: ping\ndata: {"type":"ping","pad":"${'x'.repeat(16_000)}"}\n\n`);
  for (let i = 0; i < 64; i++) upstream.write(chunk);
  await tick();
  await tick();

  // Nobody reads `out`: the relay stopped reading the upstream, whose data waits there.
  expect(upstream.isPaused()).toBe(true);
  expect(out.readableLength + out.writableLength).toBeLessThan(8 * chunk.length);
  expect(upstream.readableLength + upstream.writableLength).toBeGreaterThan(50 * chunk.length);

  const stop = Buffer.from('event: message_stop\ndata: {"type":"message_stop"}\n\n');
  upstream.end(stop);
  const received: Buffer[] = [];
  for await (const piece of out) received.push(piece as Buffer);
  expect(Buffer.concat(received).equals(Buffer.concat([first, ...Array.from({ length: 64 }, () => chunk), stop]))).toBe(true);
  expect(outcomes).toEqual(['completed']);
});
