import http from 'node:http';
import https from 'node:https';

/**
 * The keep-alive agents of the upstream requests made with node:http (the text proxy, the
 * polls), and the small GET that the polls make. node:http rather than fetch on these paths:
 * they are the most frequent upstream requests, and fetch costs three to four times the CPU
 * of node:http for the same small GET (0.30-0.47 against 0.08-0.15 ms, measured against the
 * simulator on a 2-core VM).
 */
/**
 * How long a socket waits in the pool for its next request. An upstream, a load balancer or a
 * NAT in between may drop an idle connection, with a FIN that can cross the next request on the
 * wire, or without a word, when a request sent on it waits for its timeout instead of failing at
 * once. Below common load balancers' 60 s; and with it set, Node also honours a server's
 * `Keep-Alive: timeout=N` hint (closing a second before the server would), which it ignores
 * on an agent without a timeout. Idle time of a socket in use only emits 'timeout' events,
 * which nothing here listens to: the requests keep their own deadlines.
 */
const FREE_SOCKET_IDLE_MS = 30_000;
const agentOptions = {
  keepAlive: true,
  keepAliveMsecs: 15_000,
  timeout: FREE_SOCKET_IDLE_MS,
  maxSockets: 2048,
  maxFreeSockets: 256,
  scheduling: 'lifo' as const,
};
const httpAgent = new http.Agent(agentOptions);
const httpsAgent = new https.Agent(agentOptions);

/** The request function and agent for a URL's scheme. */
export function transportFor(url: URL): { request: typeof http.request; agent: http.Agent } {
  return url.protocol === 'https:' ? { request: https.request, agent: httpsAgent } : { request: http.request, agent: httpAgent };
}

/** A small answer read whole. */
export interface SmallAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/**
 * The upstream could not be reached, or closed, stalled or overflowed before its answer was
 * whole: `code` says which (a socket error's code, or the caller's name for its own limit).
 */
export class UpstreamConnectionError extends Error {
  constructor(
    readonly code: string,
    /** Whether the request went out on a kept-alive socket. */
    readonly reused = false,
  ) {
    super(`upstream connection failed (${code})`);
    this.name = 'UpstreamConnectionError';
  }
}

/** How a request on a socket the upstream had closed fails: reset as it arrives, or refused as it is written. */
const STALE_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE']);

/**
 * Sends, and sends once more when the first try failed with ECONNRESET or EPIPE on a kept-alive
 * socket: the upstream closed it while it was idle, so nothing reached the upstream (as Node's
 * documentation advises), unless the request is no longer wanted.
 */
export async function againIfStale<T>(send: () => Promise<T>, stillWanted: () => boolean = () => true): Promise<T> {
  try {
    return await send();
  } catch (err) {
    if (err instanceof UpstreamConnectionError && err.reused && STALE_SOCKET_CODES.has(err.code) && stillWanted()) return send();
    throw err;
  }
}

/** Redirects followed within the same origin (the headers, credentials included, go only there). */
const MAX_REDIRECTS = 3;

/**
 * GETs a URL and reads the whole answer, within `timeoutMs` from the request to the last byte
 * (else `TimeoutError`) and `limitBytes` of body (else `TooLarge`); a stale kept-alive socket
 * is tried again (againIfStale). A redirect to the same origin is followed; one elsewhere is
 * answered as it is.
 */
export async function getSmall(url: string, headers: Record<string, string>, timeoutMs: number, limitBytes: number): Promise<SmallAnswer> {
  const deadline = Date.now() + timeoutMs;
  let target = new URL(url);
  for (let hop = 0; ; hop++) {
    const answer = await againIfStale(() => getOnce(target, headers, deadline, limitBytes));
    const location = answer.headers.location;
    if (answer.status < 300 || answer.status >= 400 || !location || hop === MAX_REDIRECTS) return answer;
    const next = new URL(location, target);
    if (next.origin !== target.origin) return answer;
    target = next;
  }
}

function getOnce(url: URL, headers: Record<string, string>, deadline: number, limitBytes: number): Promise<SmallAnswer> {
  const { request, agent } = transportFor(url);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', agent, headers });
    let response: http.IncomingMessage | undefined;
    const fail = (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new UpstreamConnectionError(err instanceof UpstreamConnectionError ? err.code : (err.code ?? err.name), req.reusedSocket));
    };
    // Destroying the response (once there is one) errors it, not the request.
    const stop = (code: string) => (response ?? req).destroy(new UpstreamConnectionError(code));
    const timer = setTimeout(() => stop('TimeoutError'), Math.max(0, deadline - Date.now()));
    req.once('error', fail);
    req.once('response', (res) => {
      response = res;
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > limitBytes) stop('TooLarge');
        else chunks.push(chunk);
      });
      res.once('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) });
      });
      res.once('error', fail);
    });
    req.end();
  });
}
