/**
 * Streams a stored response as Responses API events (responses/record-events.ts), following its
 * record until it ends: a background response created with `stream: true`, or any stored
 * response read with GET /v1/responses/{id}?stream=true (`starting_after` resumes after that
 * sequence number). The record is read every STREAM_POLL_MS; the run, not this stream, does the
 * work, so a client that leaves (or reconnects) changes nothing but what it is sent.
 */
import { PassThrough } from 'node:stream';
import type { ParameterizedContext } from 'koa';
import type { PerKeySlots } from '../../limits/per-key-slots';
import { isStreamEnded, recordEvents, sseOf } from '../../responses/record-events';
import type { GatewayState } from '../context';
import { takeStreamSlot } from '../text-proxy-route';
import { sleepUnlessAborted } from '../../system/abortable-sleep';

/** A comment line this often keeps proxies from closing a quiet stream. */
const KEEPALIVE_MS = 15_000;

export interface RecordStreamOptions {
  keyId: string;
  /** The response as it is now; null once it is gone (deleted). */
  read: () => Promise<Record<string, unknown> | null>;
  /** Events up to this sequence number are not sent again (-1: all). */
  startingAfter: number;
  everyMs: number;
  streams: PerKeySlots;
}

export function streamRecord(ctx: ParameterizedContext<GatewayState>, opts: RecordStreamOptions): void {
  const release = takeStreamSlot(opts.streams, opts.keyId);
  const stream = new PassThrough();
  const abort = new AbortController();
  ctx.res.once('close', () => {
    abort.abort();
    release();
  });
  ctx.status = 200;
  ctx.set({ 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no', connection: 'keep-alive' });
  ctx.body = stream;
  const keepalive = setInterval(() => stream.write(': keep-alive\n\n'), KEEPALIVE_MS);
  let sent = opts.startingAfter;
  const fail = (code: string, message: string) =>
    stream.write(sseOf({ type: 'error', data: { type: 'error', code, message, param: null, sequence_number: sent + 1 } }));

  void (async () => {
    try {
      while (!abort.signal.aborted) {
        const response = await opts.read();
        if (!response) {
          fail('response_deleted', 'The response was deleted.');
          return;
        }
        for (const event of recordEvents(response)) {
          if (event.data.sequence_number <= sent) continue;
          stream.write(sseOf(event));
          sent = event.data.sequence_number;
        }
        if (isStreamEnded(response)) return;
        await sleepUnlessAborted(opts.everyMs, abort.signal);
      }
    } catch (err) {
      // The store did not answer: the response runs on; the client reconnects with starting_after.
      ctx.state.log.warn({ err: (err as Error).message }, 'response stream ended early');
      fail(
        'stream_interrupted',
        'The response could not be read; it continues: resume with GET /v1/responses/{id}?stream=true&starting_after=<last sequence_number>.',
      );
    } finally {
      clearInterval(keepalive);
      if (!stream.writableEnded) stream.end();
    }
  })();
}
