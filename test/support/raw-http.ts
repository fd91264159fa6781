/**
 * HTTP/1.1 over a bare TCP socket, byte for byte as a test writes it: paths that fetch() would
 * normalise or refuse (malformed percent-encoding, dot segments, raw non-ASCII bytes), duplicated
 * or oversized headers, lying framing, multipart bodies built by hand, and clients that drip
 * their request slowly.
 */
import net from 'node:net';

export interface RawResponse {
  /** The status of the first response line, or null when none arrived. */
  status: number | null;
  /** Status line and headers, as received. */
  head: string;
  headers: Record<string, string>;
  body: Buffer;
  /** The server closed the connection without writing a byte. */
  closedSilently: boolean;
  /** No status line within the deadline (a hang). */
  timedOut: boolean;
  /** The socket reported an error (ECONNRESET and the like) before a status line. */
  error: string | null;
  /** Milliseconds to the status line (or to the end, when none came). */
  ms: number;
}

export interface RawOptions {
  /** Longest wait for the status line. */
  deadlineMs?: number;
  /** After the status line, how long to keep reading a body that has not ended (a stream). */
  bodyGraceMs?: number;
}

/** Sends `request` on a fresh connection and reads the answer (the connection is closed after). */
export function rawRequest(port: number, request: Buffer | string, options: RawOptions = {}): Promise<RawResponse> {
  const deadlineMs = options.deadlineMs ?? 20_000;
  const bodyGraceMs = options.bodyGraceMs ?? 2_000;
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let statusAt: number | null = null;
    let error: string | null = null;
    let settled = false;
    let grace: NodeJS.Timeout | null = null;
    const finish = (timedOut: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      if (grace) clearTimeout(grace);
      socket.destroy();
      resolve(parseResponse(Buffer.concat(chunks), { timedOut, error, ms: (statusAt ?? Date.now()) - started }));
    };
    const deadline = setTimeout(() => finish(statusAt === null), deadlineMs);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      if (statusAt === null && withoutInterim(Buffer.concat(chunks)).includes('\r\n')) {
        statusAt = Date.now();
        grace = setTimeout(() => finish(false), bodyGraceMs);
      }
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      error = err.code ?? err.message;
    });
    socket.on('close', () => finish(false));
    socket.on('connect', () => {
      socket.write(request, () => undefined);
    });
  });
}

/** The bytes after any interim answers (100 Continue), which come before the response itself. */
function withoutInterim(raw: Buffer): Buffer {
  while (/^HTTP\/1\.[01] 1\d\d /.test(raw.subarray(0, 16).toString('latin1'))) {
    const end = raw.indexOf('\r\n\r\n');
    if (end < 0) return Buffer.alloc(0);
    raw = raw.subarray(end + 4);
  }
  return raw;
}

function parseResponse(raw: Buffer, extra: { timedOut: boolean; error: string | null; ms: number }): RawResponse {
  raw = withoutInterim(raw);
  const split = raw.indexOf('\r\n\r\n');
  const head = (split >= 0 ? raw.subarray(0, split) : raw).toString('latin1');
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(head);
  const headers: Record<string, string> = {};
  for (const line of head.split('\r\n').slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return {
    status: match ? Number(match[1]) : null,
    head,
    headers,
    body: split >= 0 ? raw.subarray(split + 4) : Buffer.alloc(0),
    closedSilently: raw.length === 0 && !extra.timedOut,
    ...extra,
  };
}

/** A request's bytes: request line, headers (in order, duplicates allowed), body. */
export function buildRequest(method: string, target: string | Buffer, headers: [string, string | Buffer][], body?: Buffer | string): Buffer {
  const parts: Buffer[] = [Buffer.from(`${method} `), Buffer.isBuffer(target) ? target : Buffer.from(target, 'latin1'), Buffer.from(' HTTP/1.1\r\n')];
  for (const [name, value] of headers) parts.push(Buffer.from(`${name}: `), Buffer.isBuffer(value) ? value : Buffer.from(value, 'latin1'), Buffer.from('\r\n'));
  parts.push(Buffer.from('\r\n'));
  if (body !== undefined) parts.push(Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8'));
  return Buffer.concat(parts);
}
