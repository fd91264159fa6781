/**
 * A thin client of one channel's Responses API: create (plain, or streamed as the raw event
 * stream to relay), retrieve, cancel and delete. Failures are UpstreamErrors classified like the
 * video clients' (`retryable`: 429, 5xx, network, an unreadable answer; `rejected`: other 4xx),
 * so a caller (a route, or a workflow's activity) can decide to retry or to give up.
 */
import type { IncomingMessage } from 'node:http';
import type { TextChannel } from '../../config/channels';
import { getUpstreamJson, isRetryableStatus, readJson, upstreamFetch, UpstreamError } from '../http';
import { retryAfterMs } from '../retry-after';
import { UpstreamConnectionError } from '../keep-alive';
import { postText, readAll } from '../text-http';
import { deletedResponse, responseObject, type ResponseObject } from './schemas';

export interface ResponsesClientTimeouts {
  /** create (until the whole answer of a plain create, or a stream's headers), cancel, delete */
  requestMs: number;
  /** retrieve: short, so a poll that hangs ends well inside its activity's timeout */
  pollMs: number;
}

export interface ResponsesClient {
  /** POST /responses (not streamed). `idempotencyKey` lets a retried create after a lost answer find the same response. */
  create(body: Record<string, unknown>, opts?: { idempotencyKey?: string }): Promise<ResponseObject>;
  /** POST /responses with stream: true: the 2xx event stream as it arrives (the caller reads and closes it). */
  createStream(body: Record<string, unknown>, signal: AbortSignal): Promise<IncomingMessage>;
  retrieve(upstreamId: string): Promise<ResponseObject>;
  cancel(upstreamId: string): Promise<ResponseObject>;
  /** True when the upstream deleted it. */
  delete(upstreamId: string): Promise<boolean>;
}

/** A response object read whole: its output may carry generated images (base64), so far more than a job's status. */
const RESPONSE_MAX_BYTES = 256 * 1024 * 1024;

/** `channel.baseUrl` is what the OpenAI SDK takes as its base (`https://api.openai.com/v1`). */
export function responsesUrl(channel: Pick<TextChannel, 'baseUrl'>, upstreamId?: string, action?: 'cancel'): string {
  const base = `${channel.baseUrl}/responses`;
  if (upstreamId === undefined) return base;
  return `${base}/${encodeURIComponent(upstreamId)}${action ? `/${action}` : ''}`;
}

function reasonOf(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } };
    if (typeof parsed.error?.message === 'string') return parsed.error.message;
  } catch {
    // not JSON: the raw text
  }
  return text.slice(0, 300) || 'no error message';
}

export function responsesClient(channel: TextChannel, timeouts: ResponsesClientTimeouts): ResponsesClient {
  const auth = { authorization: `Bearer ${channel.apiKey}` };
  const json = { ...auth, 'content-type': 'application/json' };
  const call = (what: string, url: string, init: RequestInit, timeoutMs: number) => upstreamFetch(what, url, init, timeoutMs, channel.name, 'text');

  return {
    async create(body, opts = {}) {
      const headers = opts.idempotencyKey ? { ...json, 'idempotency-key': opts.idempotencyKey } : json;
      const payload = JSON.stringify({ ...body, stream: false });
      const res = await call('responses create', responsesUrl(channel), { method: 'POST', headers, body: payload }, timeouts.requestMs);
      return readJson('responses create', res, responseObject);
    },

    async createStream(body, signal) {
      let res: IncomingMessage;
      try {
        res = await postText({
          url: responsesUrl(channel),
          headers: { ...json, accept: 'text/event-stream' },
          body: Buffer.from(JSON.stringify({ ...body, stream: true })),
          signal,
          timeoutMs: timeouts.requestMs,
          channel: channel.name,
        });
      } catch (err) {
        const code = err instanceof UpstreamConnectionError ? err.code : (err as Error).name;
        throw new UpstreamError(`responses create (stream): connection failed (${code})`, 'retryable');
      }
      const status = res.statusCode ?? 502;
      if (status >= 200 && status < 300) return res;
      const text = (await readAll(res, timeouts.requestMs, 1024 * 1024).catch(() => Buffer.alloc(0))).toString('utf8');
      const retryAfter = res.headers['retry-after'];
      throw new UpstreamError(
        `responses create (stream): HTTP ${status}: ${reasonOf(text)}`,
        isRetryableStatus(status) ? 'retryable' : 'rejected',
        status,
        retryAfterMs(typeof retryAfter === 'string' ? retryAfter : undefined),
      );
    },

    async retrieve(upstreamId) {
      return getUpstreamJson('responses retrieve', responsesUrl(channel, upstreamId), auth, timeouts.pollMs, channel.name, responseObject, {
        kind: 'text',
        maxBytes: RESPONSE_MAX_BYTES,
      });
    },

    async cancel(upstreamId) {
      const res = await call('responses cancel', responsesUrl(channel, upstreamId, 'cancel'), { method: 'POST', headers: auth }, timeouts.requestMs);
      return readJson('responses cancel', res, responseObject);
    },

    async delete(upstreamId) {
      const res = await call('responses delete', responsesUrl(channel, upstreamId), { method: 'DELETE', headers: auth }, timeouts.requestMs);
      return (await readJson('responses delete', res, deletedResponse)).deleted;
    },
  };
}
