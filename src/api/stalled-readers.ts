/**
 * Closes connections whose client stopped reading its answer. Node's HTTP server bounds how long
 * a request may take to arrive, never how long an answer may wait to be read, so a client that
 * asks for a long answer (a text stream, a video download) and then reads nothing would hold its
 * socket, the socket's buffers, the upstream request paused behind it and its place under
 * HTTP_MAX_CONNECTIONS until the answer ends, which for a paused stream is never.
 *
 * A connection counts as stalled while it has bytes waiting to be sent and none of them has left
 * for `stallMs`. A slow reader that takes anything in time is not touched, and neither is a quiet
 * answer with nothing waiting (a stream between its events, an upstream thinking): those are the
 * text stream's idle bound and the upstream's timeout. Checked by a sweep every quarter of the
 * bound (at most every 5 s), so a stalled client is closed between `stallMs` and 1.25 × it after
 * its last byte left, and no request pays for the watch but one Set entry per connection.
 */
import type http from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { metrics } from '../metrics/metrics';

/** What the sweep saw of a connection the last time it had bytes waiting. */
interface Backlog {
  /** Bytes the kernel had taken, which only grows while the client reads. */
  sent: number;
  /** When `sent` was last seen to move, or the backlog first seen. */
  since: number;
}

const MAX_SWEEP_MS = 5000;

/** Bytes handed over and done with: written minus those still waiting (the one in flight included). */
const sentOf = (socket: Socket): number => socket.bytesWritten - socket.writableLength;

export function closeStalledReaders(server: http.Server, stallMs: number, logger: Logger): void {
  /** Open connections, each with its backlog as the last sweep saw it (null: nothing waiting). */
  const open = new Map<Socket, Backlog | null>();
  server.on('connection', (socket: Socket) => {
    open.set(socket, null);
    socket.once('close', () => open.delete(socket));
  });

  const sweep = () => {
    const now = Date.now();
    for (const [socket, seen] of open) {
      if (socket.destroyed || socket.writableLength === 0) {
        if (seen) open.set(socket, null);
        continue;
      }
      const sent = sentOf(socket);
      if (!seen || seen.sent !== sent) {
        open.set(socket, { sent, since: now });
        continue;
      }
      if (now - seen.since < stallMs) continue;
      open.delete(socket);
      metrics.stalledReaders.inc();
      // No address or path: what a client asked for stays out of the logs.
      logger.warn(
        { waitingBytes: socket.writableLength, stalledMs: now - seen.since },
        'client read nothing of its answer for HTTP_SEND_STALL_MS; connection closed',
      );
      // The answer's own close handlers run from here: a relayed text stream is billed as aborted.
      socket.destroy();
    }
  };
  const timer = setInterval(sweep, Math.min(MAX_SWEEP_MS, Math.ceil(stallMs / 4)));
  timer.unref();
  server.once('close', () => clearInterval(timer));
}
