import http from 'node:http';
import { metrics, upstreamStatusLabel } from '../metrics/metrics';
import { startUpstreamSpan, type UpstreamSpan } from '../telemetry/upstream-spans';
import { againIfStale, transportFor, UpstreamConnectionError } from './keep-alive';

/**
 * The text proxy's HTTP client: node:http with keep-alive agents (keep-alive.ts) rather than
 * fetch, because it hands back the upstream response as a plain Readable (piped to the client
 * with backpressure) and costs less per request on the hot path.
 */

export interface TextUpstreamRequest {
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  /** Aborts the request (client gone); the response stream is destroyed with it. None: it runs to its answer. */
  signal?: AbortSignal;
  /** The longest wait for response headers. */
  timeoutMs: number;
  /** The channel's name, for the attempt's span (tracing on). */
  channel: string;
}

/** What a POST to one upstream URL always carries: parsed once per URL (a channel's endpoint). */
interface UpstreamTarget {
  request: typeof http.request;
  options: http.RequestOptions;
  /** The Host header: with array headers Node adds none itself. */
  host: string;
  /** Basic credentials from the URL's user and password, which Node would add from an `auth` option. */
  authorization: string | null;
}

const targets = new Map<string, UpstreamTarget>();

/** The URL's request options, parsed at its first request. */
function targetOf(urlString: string): UpstreamTarget {
  let target = targets.get(urlString);
  if (!target) {
    const url = new URL(urlString);
    const { request, agent } = transportFor(url);
    // As Node's urlToHttpOptions has them: percent-decoded.
    const credentials = url.username || url.password ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : null;
    target = {
      request,
      // As Node's urlToHttpOptions has it: an IPv6 host without its brackets.
      options: {
        protocol: url.protocol,
        hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
        port: url.port,
        path: url.pathname + url.search,
        method: 'POST',
        agent,
      },
      host: url.host,
      authorization: credentials === null ? null : `Basic ${Buffer.from(credentials).toString('base64')}`,
    };
    // Channels are few and fixed: the map stays as small.
    if (targets.size < 1000) targets.set(urlString, target);
  }
  return target;
}

function sendOnce(req: TextUpstreamRequest): Promise<http.IncomingMessage> {
  const target = targetOf(req.url);
  return new Promise((resolve, reject) => {
    const out = requestWithRawHeaders(target, req);
    const timer = setTimeout(() => out.destroy(new UpstreamConnectionError('timeout')), req.timeoutMs);
    out.once('response', (res) => {
      clearTimeout(timer);
      resolve(res);
    });
    out.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      const code = err instanceof UpstreamConnectionError ? err.code : err.name === 'AbortError' ? 'aborted' : (err.code ?? err.name);
      reject(new UpstreamConnectionError(code, out.reusedSocket));
    });
    out.end(req.body);
  });
}

/**
 * The request with its headers as a flat array, which Node writes as they are: an object costs a
 * setHeader per header and the Host header worked out per request (5-6 % of a text request's CPU
 * at 32 connections). Names and values are checked as setHeader would. The URL's credentials go
 * as Basic authorization unless the headers carry one, as Node's `auth` option does.
 */
function requestWithRawHeaders(target: UpstreamTarget, req: TextUpstreamRequest): http.ClientRequest {
  const headers = ['host', target.host];
  let authorized = false;
  for (const [name, value] of Object.entries(req.headers)) {
    http.validateHeaderName(name);
    http.validateHeaderValue(name, value);
    headers.push(name, value);
    // Looked for only when the URL carries credentials: every request passes here.
    if (target.authorization && !authorized && name.toLowerCase() === 'authorization') authorized = true;
  }
  if (target.authorization && !authorized) headers.push('authorization', target.authorization);
  headers.push('content-length', String(req.body.length));
  // Only when there is one: a signal costs the request an abort listener.
  return target.request({ ...target.options, headers, ...(req.signal && { signal: req.signal }) });
}

/**
 * POSTs and resolves with the response as soon as its headers arrive; a stale kept-alive socket
 * is tried again (againIfStale), unless the client left meanwhile.
 */
export function postText(req: TextUpstreamRequest): Promise<http.IncomingMessage> {
  const span = startUpstreamSpan({ kind: 'text', channel: req.channel, method: 'POST', url: req.url });
  // Tracing off: the request as it is, with nothing added on the hot path.
  if (!span) return sendWithRetry(req);
  return sendWithRetry(req).then(
    (res) => {
      endWithResponse(span, res);
      return res;
    },
    (err: unknown) => {
      span.end({ error: err instanceof UpstreamConnectionError ? err.code : (err as Error).name });
      throw err;
    },
  );
}

/**
 * The request, retried once on a reset keep-alive socket; counted on
 * gateway_upstream_requests_total as video requests are in upstreamFetch (a request abandoned
 * because its client left is not an upstream failure, and is not counted).
 */
async function sendWithRetry(req: TextUpstreamRequest): Promise<http.IncomingMessage> {
  let res: http.IncomingMessage;
  try {
    res = await againIfStale(
      () => sendOnce(req),
      () => !req.signal?.aborted,
    );
  } catch (err) {
    if (!req.signal?.aborted) metrics.upstreamRequests.inc({ channel: req.channel, kind: 'text', status: upstreamStatusLabel(null) });
    throw err;
  }
  metrics.upstreamRequests.inc({ channel: req.channel, kind: 'text', status: String(res.statusCode ?? 502) });
  return res;
}

/** The attempt's span covers the whole answer, a stream's last byte included: it ends when the response closes. */
function endWithResponse(span: UpstreamSpan, res: http.IncomingMessage): void {
  const status = res.statusCode ?? 502;
  const end = () => span.end(res.complete ? { status } : { status, error: 'response_incomplete' });
  if (res.closed) end();
  else res.once('close', end);
}

/** Reads a whole (small or non-streamed) body; a stall past the deadline or a reset rejects. */
export function readAll(res: http.IncomingMessage, timeoutMs: number, limitBytes = 256 * 1024 * 1024): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(() => res.destroy(new UpstreamConnectionError('timeout')), timeoutMs);
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) res.destroy(new UpstreamConnectionError('response too large'));
      else chunks.push(chunk);
    });
    res.once('end', () => {
      clearTimeout(timer);
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
    });
    res.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(err instanceof UpstreamConnectionError ? err : new UpstreamConnectionError(err.code ?? err.name));
    });
    res.once('aborted', () => {
      clearTimeout(timer);
      reject(new UpstreamConnectionError('aborted'));
    });
  });
}
