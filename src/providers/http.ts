import { z } from 'zod';
import { metrics, upstreamStatusLabel } from '../metrics/metrics';
import { startUpstreamSpan } from '../telemetry/upstream-spans';
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
    metrics.upstreamRequests.inc({ channel, kind, status: upstreamStatusLabel(null) });
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
    span?.end({ error: cause });
    const message = `${what}: connection failed (${cause})`;
    failureSink?.(channel, true, message);
    throw new UpstreamError(message, 'retryable', undefined, undefined, cause);
  }
  metrics.upstreamRequests.inc({ channel, kind, status: String(res.status) });
  span?.end({ status: res.status });
  if (res.ok || (res.status >= 300 && res.status < 400 && init.redirect === 'manual')) return res;
  const text = await res.text().catch(() => '');
  const message = `${what}: HTTP ${res.status}: ${reasonOf(text)}`;
  failureSink?.(channel, isRetryableStatus(res.status), message);
  throw new UpstreamError(message, isRetryableStatus(res.status) ? 'retryable' : 'rejected', res.status, retryAfterMs(res.headers.get('retry-after')));
}

export async function readJson<T extends z.ZodType>(what: string, res: Response, schema: T): Promise<z.output<T>> {
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    throw new UpstreamError(`${what}: response is not JSON`, 'retryable', res.status);
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new UpstreamError(`${what}: unexpected response shape (${parsed.error.issues[0]?.message ?? 'invalid'})`, 'retryable', res.status);
  }
  return parsed.data;
}
