import { z } from 'zod';
import { metrics, upstreamStatusLabel } from '../metrics/metrics';
import { startUpstreamSpan, type UpstreamSpan } from '../telemetry/upstream-spans';
import { getSmall, UpstreamConnectionError, type SmallAnswer } from './keep-alive';
import { retryAfterMs } from './retry-after';

/**
 * How an upstream call went wrong decides what the workflow does: `retryable` (429, 5xx,
 * network) is retried with backoff; `rejected` (other 4xx) fails the task with the
 * provider's own reason, since sending the same request again cannot succeed.
 */
export class UpstreamError extends Error {
  constructor(
    message: string,
    readonly kind: 'retryable' | 'rejected',
    readonly status?: number,
    readonly retryAfterMs?: number,
    /** A request that got no answer: the network error's code (ECONNREFUSED, UND_ERR_SOCKET, TimeoutError, ...). */
    readonly networkCode?: string,
  ) {
    super(message);
    this.name = 'UpstreamError';
  }
}

const errorBody = z.object({
  error: z.union([z.object({ message: z.string().optional(), status: z.string().optional(), code: z.unknown().optional() }), z.string()]),
});

function reasonOf(text: string): string {
  try {
    const parsed = errorBody.safeParse(JSON.parse(text));
    if (parsed.success) {
      const e = parsed.data.error;
      if (typeof e === 'string') return e;
      if (e.message) return e.message;
    }
  } catch {
    // not JSON: fall through to the raw text
  }
  return text.slice(0, 300) || 'no error message';
}

export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 425 || status === 429 || status >= 500;
}

/**
 * fetch with a deadline; any non-2xx becomes an UpstreamError carrying the provider's reason.
 * Every attempt is counted on gateway_upstream_requests_total under `channel` (and is a span, tracing on).
 */
/** Where failed upstream video requests are reported: the worker's ChannelErrorLog (GET /admin/channels). */
type FailureSink = (channel: string, retryable: boolean, message: string) => void;
let failureSink: FailureSink | null = null;

export function reportUpstreamFailuresTo(sink: FailureSink | null): void {
  failureSink = sink;
}

export async function upstreamFetch(
  what: string,
  url: string,
  init: RequestInit,
  timeoutMs: number,
  channel: string,
  kind: 'video' | 'text' = 'video',
): Promise<Response> {
  // With tracing on, a client span from the request to its response headers (the body is the caller's).
  const span = startUpstreamSpan({ kind, channel, method: init.method ?? 'GET', url, operation: what });
  let res: Response;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    throw connectionFailed(what, channel, kind, (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name, span);
  }
  answered(channel, kind, res.status, span);
  if (res.ok || (res.status >= 300 && res.status < 400 && init.redirect === 'manual')) return res;
  throw refused(what, channel, res.status, await res.text().catch(() => ''), res.headers.get('retry-after'));
}

/** The most a job's status may hold unless the caller says otherwise: far above any, and a bound on a misbehaving upstream. */
const POLL_ANSWER_MAX_BYTES = 4 * 1024 * 1024;

/**
 * A GET whose JSON answer is parsed with `schema`: the polls, the most frequent upstream
 * requests, on node:http (keep-alive.ts) rather than fetch. Errors as upstreamFetch and
 * readJson give them; the deadline covers the whole answer, an answer over `maxBytes` (4 MiB
 * by default) is cut off as a retryable failure, and a redirect is followed only within the
 * same origin.
 */
export async function getUpstreamJson<T extends z.ZodType>(
  what: string,
  url: string,
  headers: Record<string, string>,
  timeoutMs: number,
  channel: string,
  schema: T,
  opts: { kind?: 'video' | 'text'; maxBytes?: number } = {},
): Promise<z.output<T>> {
  const kind = opts.kind ?? 'video';
  const span = startUpstreamSpan({ kind, channel, method: 'GET', url, operation: what });
  let res: SmallAnswer;
  try {
    res = await getSmall(url, headers, timeoutMs, opts.maxBytes ?? POLL_ANSWER_MAX_BYTES);
  } catch (err) {
    throw connectionFailed(what, channel, kind, err instanceof UpstreamConnectionError ? err.code : (err as Error).name, span);
  }
  answered(channel, kind, res.status, span);
  if (res.status < 200 || res.status >= 300) {
    const retryAfter = res.headers['retry-after'];
    throw refused(what, channel, res.status, res.body.toString('utf8'), typeof retryAfter === 'string' ? retryAfter : null);
  }
  return parsedAs(what, res.status, res.body.toString('utf8'), schema);
}

/** A request that got no answer: counted, ended, reported, and retryable. */
function connectionFailed(what: string, channel: string, kind: 'video' | 'text', cause: string, span: UpstreamSpan | null): UpstreamError {
  metrics.upstreamRequests.inc({ channel, kind, status: upstreamStatusLabel(null) });
  span?.end({ error: cause });
  const message = `${what}: connection failed (${cause})`;
  failureSink?.(channel, true, message);
  return new UpstreamError(message, 'retryable', undefined, undefined, cause);
}

/** An answer came (of any status): counted, and the attempt's span ended with its status. */
function answered(channel: string, kind: 'video' | 'text', status: number, span: UpstreamSpan | null): void {
  metrics.upstreamRequests.inc({ channel, kind, status: String(status) });
  span?.end({ status });
}

/** A non-2xx answer, with the provider's reason; retryable or not by its status. */
function refused(what: string, channel: string, status: number, text: string, retryAfter: string | null): UpstreamError {
  const message = `${what}: HTTP ${status}: ${reasonOf(text)}`;
  failureSink?.(channel, isRetryableStatus(status), message);
  return new UpstreamError(message, isRetryableStatus(status) ? 'retryable' : 'rejected', status, retryAfterMs(retryAfter));
}

export async function readJson<T extends z.ZodType>(what: string, res: Response, schema: T): Promise<z.output<T>> {
  // A body that breaks off reads as empty, which is not JSON.
  return parsedAs(what, res.status, await res.text().catch(() => ''), schema);
}

/** An answer that is not JSON, or not of the expected shape, is retryable: the provider may be mid-deploy. */
function parsedAs<T extends z.ZodType>(what: string, status: number, text: string, schema: T): z.output<T> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new UpstreamError(`${what}: response is not JSON`, 'retryable', status);
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new UpstreamError(`${what}: unexpected response shape (${parsed.error.issues[0]?.message ?? 'invalid'})`, 'retryable', status);
  }
  return parsed.data;
}
