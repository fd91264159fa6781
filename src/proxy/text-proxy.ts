import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { TextChannel } from '../config/channels';
import type { TextChannelType } from '../providers/registry';
import { MAX_SSE_EVENT_CHARS, SseSplitter } from '../providers/sse-events';
import { UpstreamConnectionError } from '../providers/keep-alive';
import { postText, readAll } from '../providers/text-http';
import { emptyUsage, type StreamTap, type TextUsage } from '../providers/usage';
import type { UsageOutcome } from '../billing/usage';
import type { ChannelHealth } from './channel-health';
import { retryAfterMs } from '../providers/retry-after';

/** What differs between the two text protocols; everything else in the proxy is shared. */
export interface TextProtocol {
  channelType: TextChannelType;
  url(channel: TextChannel): string;
  headers(channel: TextChannel, passthrough: Record<string, string>): Record<string, string>;
  /** The body to send when it differs from the client's bytes, else null. */
  upstreamBody(body: Record<string, unknown>, upstreamModel: string): Record<string, unknown> | null;
  usageOfBody(body: unknown): TextUsage | null;
  /** UTF-8 bytes of the generated text in a non-streamed answer (billed by when it carries no usage). */
  outputBytesOfBody(text: string): number;
  tap(clientWantsUsage: boolean): StreamTap;
  isErrorBody(body: unknown): boolean;
  errorBody(status: number, message: string): unknown;
  /** A non-streamed 2xx answer as the client gets it, when it differs from the upstream's (the Responses API's ids). */
  mapAnswer?(text: Buffer): Buffer;
}

export interface ProxyRequest {
  protocol: TextProtocol;
  channels: readonly TextChannel[];
  model: string;
  body: Record<string, unknown>;
  /** The client's bytes, sent unchanged when nothing needs mapping. */
  raw: Buffer;
  stream: boolean;
  clientWantsUsage: boolean;
  /** Request headers forwarded as they are (anthropic-beta). */
  passthroughHeaders: Record<string, string>;
  /**
   * Fires when the client leaves. A stream's upstream request is aborted with it (what was
   * produced until then is billed). A non-streamed request runs on to its answer, which is
   * billed and dropped: the provider bills it either way.
   */
  signal: AbortSignal;
  log: Logger;
  /**
   * The upstream produced an answer (whole, or a stream that ended one way or another): bill
   * it. The proxy waits for the returned promise before it ends the client's answer, so usage
   * is written before the answer ends.
   */
  onUsage(channel: TextChannel, report: UsageReport): Promise<void>;
}

/** What the gateway knows of an answer's usage when it ends. */
export interface UsageReport {
  /** The provider's counts, as far as it sent them (all zero when it sent none). */
  usage: TextUsage;
  /** Whether `usage` is the provider's complete report (a non-streamed answer's, or a stream's that ended properly). */
  reported: boolean;
  outcome: UsageOutcome;
  /** UTF-8 bytes of generated text relayed (or received, when not streamed). */
  outputBytes: number;
}

export interface ProxyReply {
  status: number;
  headers: Record<string, string>;
  body: Buffer | RelayedStream;
  /** Nanoseconds spent waiting on upstreams for this answer (to a stream's first byte). */
  upstreamNs: bigint;
}

export interface ProxyLimits {
  timeoutMs: number;
  idleMs: number;
}

/** The client left before an answer came; there is no one to reply to. */
export class ClientGoneError extends Error {
  constructor() {
    super('client disconnected');
  }
}

/** Upstream answers that move the request to the next channel (nothing reached the client yet). */
function isFailoverStatus(status: number): boolean {
  return status === 429 || status >= 500 || status === 401 || status === 403;
}

/** How long the channel asked to be left alone; 0 when it did not say. */
function restFor(res: IncomingMessage): number {
  const header = res.headers['retry-after'];
  return retryAfterMs(typeof header === 'string' ? header : undefined) ?? 0;
}

function replyHeaders(res: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  const contentType = res.headers['content-type'];
  if (contentType) out['content-type'] = contentType;
  const retryAfter = res.headers['retry-after'];
  if (typeof retryAfter === 'string') out['retry-after'] = retryAfter;
  const upstreamId = res.headers['request-id'] ?? res.headers['x-request-id'];
  if (typeof upstreamId === 'string') out['upstream-request-id'] = upstreamId;
  return out;
}

/** A stream that ended properly but whose upstream sent no usage at all is billed by estimate, never as 0. */
function isEmpty(u: TextUsage): boolean {
  return u.inputTokens + u.outputTokens + u.cacheCreationTokens + u.cacheReadTokens === 0;
}

function parseJson(buf: Buffer): unknown {
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** Why a channel failed a request, as gateway_text_failovers_total's reason. */
type FailureKind = '429' | '5xx' | 'auth' | 'network' | 'empty_stream';

interface Failure {
  channel: string;
  kind: FailureKind;
  status: number | null;
  headers: Record<string, string>;
  body: unknown;
  reason: string;
}

function failureOf(
  channel: TextChannel,
  status: number | null,
  kind: FailureKind,
  reason: string,
  rest?: { headers: Record<string, string>; body: unknown },
): Failure {
  return { channel: channel.name, kind, status, headers: rest?.headers ?? {}, body: rest?.body ?? null, reason };
}

/**
 * Resolves with the first data chunk of a 2xx stream, or null when the upstream ended or
 * broke before sending any: until then nothing has reached the client and the request may
 * still move to another channel.
 */
function firstChunk(res: IncomingMessage, timeoutMs: number): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const done = (chunk: Buffer | null) => {
      clearTimeout(timer);
      res.off('data', onData);
      res.off('end', onEnd);
      res.off('error', onEnd);
      res.off('close', onEnd);
      res.pause();
      resolve(chunk);
    };
    const onData = (chunk: Buffer) => done(chunk);
    const onEnd = () => done(null);
    const timer = setTimeout(() => {
      done(null);
      res.destroy();
    }, timeoutMs);
    res.on('data', onData);
    res.once('end', onEnd);
    res.once('error', onEnd);
    res.once('close', onEnd);
  });
}

/**
 * Where a relayed stream goes: the client's response (ServerResponse), or any Writable. Only
 * what the relay uses, so both fit.
 */
export interface StreamSink {
  readonly destroyed: boolean;
  write(chunk: Buffer | string): boolean;
  end(chunk?: Buffer | string): unknown;
  cork(): void;
  uncork(): void;
  once(event: 'drain' | 'close', listener: () => void): unknown;
}

/**
 * A streamed answer on its way from the upstream, read once it is sent somewhere: the route
 * sets the status and headers, then calls `sendTo` with the client's response.
 */
export interface RelayedStream {
  sendTo(sink: StreamSink): void;
  /** The client left before the answer was sent: the upstream is dropped, what it produced is billed. */
  abandon(): void;
}

/** Bytes read in one turn past which the relay writes them at once rather than at the turn's end. */
const FLUSH_NOW_BYTES = 16 * 1024;

/**
 * Forwards an upstream SSE stream to the client as it arrives, with backpressure (a slow
 * client pauses the upstream read), and makes sure the client's stream always ends: a
 * stream that breaks off or goes silent for `idleMs` gets the protocol's error event (time
 * paused for a client that does not read is not the upstream's silence). A client that leaves
 * destroys the upstream response, which aborts the upstream request.
 * The client's stream ends only once `onDone` (billing) has resolved.
 *
 * It writes straight to the client's response, with no stream between them, and what arrives
 * in one turn of the event loop goes out in one write at the turn's end (setImmediate). So the
 * data that came with the upstream's end waits for the settlement and leaves in the same write
 * as the end of the client's answer: one socket write fewer per answer, and for an answer
 * that came in one read, one write in all (its first byte then waits for the settlement, at
 * most TEXT_JOURNAL_SYNC_WAIT_MS, the moment its last byte would have waited for anyway).
 */
export function relay(
  res: IncomingMessage,
  first: Buffer,
  tap: StreamTap,
  idleMs: number,
  clientGone: AbortSignal,
  onDone: (outcome: UsageOutcome) => Promise<void>,
): RelayedStream {
  const splitter = new SseSplitter();
  let sink: StreamSink | null = null;
  /** Read from the upstream, not yet written to the sink. */
  let pending: Array<Buffer | string> = [];
  let pendingBytes = 0;
  let flushing: NodeJS.Immediate | null = null;
  let finished = false;
  /** onDone has resolved: the sink may end. */
  let billed = false;
  let draining = false;
  let idle: NodeJS.Timeout | undefined;

  const cancelFlush = () => {
    if (flushing) clearImmediate(flushing);
    flushing = null;
  };
  const flush = () => {
    cancelFlush();
    if (!sink || sink.destroyed || pending.length === 0) return;
    const out = sink;
    const pieces = pending;
    pending = [];
    pendingBytes = 0;
    out.cork();
    let room = true;
    for (const piece of pieces) room = out.write(piece) && room;
    out.uncork();
    if (!room && !draining) {
      draining = true;
      // The upstream is paused for the client now, so its silence is not its own: the idle bound
      // waits until the client has read (a client that never does: HTTP_SEND_STALL_MS).
      clearTimeout(idle);
      res.pause();
      out.once('drain', () => {
        draining = false;
        if (finished) return;
        armIdle();
        res.resume();
      });
    }
  };
  const write = (data: Buffer | string) => {
    pending.push(data);
    pendingBytes += data.length;
    if (finished) return;
    // A turn that read a lot writes it now, so that a client that does not keep up pauses the upstream.
    if (pendingBytes >= FLUSH_NOW_BYTES) flush();
    else flushing ??= setImmediate(flush);
  };
  /** The answer's end, with whatever it still holds, in one write. */
  const endSink = () => {
    if (!sink || !billed || sink.destroyed) return;
    const last = pending.pop();
    if (pending.length > 0) {
      sink.cork();
      for (const piece of pending) sink.write(piece);
    }
    pending = [];
    // end() uncorks the sink whole, so what was corked above leaves with the end.
    sink.end(last);
  };
  const finish = (outcome: UsageOutcome, note?: string) => {
    if (finished) return;
    finished = true;
    clearTimeout(idle);
    cancelFlush();
    if (note) pending.push(tap.breakOff(note));
    void onDone(outcome).finally(() => {
      billed = true;
      endSink();
    });
  };
  const armIdle = () => {
    clearTimeout(idle);
    idle = setTimeout(() => {
      // finish first: destroying the response fires its abort handlers synchronously.
      finish('failed', `The upstream sent nothing for ${Math.round(idleMs / 1000)} s; the stream was ended.`);
      res.destroy();
    }, idleMs);
  };
  const onChunk = (chunk: Buffer) => {
    if (!draining) armIdle();
    let readable: boolean;
    if (tap.dropsEvents) {
      readable = splitter.push(chunk, (e) => {
        const forward = tap.onEvent(e.name, e.data);
        if (typeof forward === 'string') write(forward);
        else if (forward) write(`${e.raw}\n\n`);
      });
    } else {
      write(chunk);
      readable = splitter.push(chunk, (e) => void tap.onEvent(e.name, e.data));
    }
    if (readable) return;
    // Not SSE, or an event with no end in sight: holding more of it would only cost memory.
    finish('failed', `The upstream sent an event of more than ${MAX_SSE_EVENT_CHARS / (1024 * 1024)} MiB; the stream was ended.`);
    res.destroy();
  };

  // Until the answer has somewhere to go the upstream is not read on (firstChunk paused it).
  onChunk(first);
  res.on('data', onChunk);
  res.once('end', () => {
    if (tap.ended) finish(tap.errored ? 'failed' : 'completed');
    else finish('failed', 'The upstream stream ended before its final event.');
  });
  // When the client left, the route aborted the upstream request, which ends up here too.
  const broke = () => (clientGone.aborted ? finish('aborted') : finish('failed', 'The upstream connection broke off mid-stream.'));
  res.once('error', broke);
  res.once('aborted', broke);
  const clientLeft = () => {
    if (finished) return;
    res.destroy();
    finish('aborted');
  };
  return {
    sendTo(to) {
      sink = to;
      // The client left (its response closed before the answer ended).
      to.once('close', clientLeft);
      if (finished) endSink();
      else {
        flushing ??= setImmediate(flush);
        res.resume();
      }
    },
    abandon: clientLeft,
  };
}

/**
 * Sends a text request to the channels serving its model, in the health order, moving to
 * the next on 429, 5xx, 401/403 or a connection error as long as nothing has reached the
 * client. Other 4xx answers are the client's and come back as they are.
 */
export async function proxyText(req: ProxyRequest, health: ChannelHealth, limits: ProxyLimits): Promise<ProxyReply> {
  const { protocol } = req;
  let failure: Failure | null = null;
  // A non-streamed request is not abandoned when its client leaves (see ProxyRequest.signal).
  const upstreamSignal = req.stream ? req.signal : undefined;
  // Time spent waiting on upstreams (failed attempts included), so the gateway's own share of
  // the answer's time can be told apart (gateway_text_added_latency_seconds).
  let upstreamNs = 0n;
  const waitOn = async <T>(upstream: Promise<T>): Promise<T> => {
    const started = process.hrtime.bigint();
    try {
      return await upstream;
    } finally {
      upstreamNs += process.hrtime.bigint() - started;
    }
  };

  for (const channel of health.order(req.channels)) {
    if (req.signal.aborted) throw new ClientGoneError();
    // The previous channel's failure moved the request on to this one.
    if (failure) health.failedOver(failure.channel, failure.kind);
    const upstreamModel = channel.models[req.model] ?? req.model;
    const mapped = protocol.upstreamBody(req.body, upstreamModel);
    const body = mapped ? Buffer.from(JSON.stringify(mapped)) : req.raw;

    let res: IncomingMessage;
    try {
      res = await waitOn(
        postText({
          url: protocol.url(channel),
          headers: protocol.headers(channel, req.passthroughHeaders),
          body,
          signal: upstreamSignal,
          timeoutMs: limits.timeoutMs,
          channel: channel.name,
        }),
      );
    } catch (err) {
      if (upstreamSignal?.aborted) throw new ClientGoneError();
      const reason = err instanceof UpstreamConnectionError ? err.message : String(err);
      health.failed(channel.name, reason);
      req.log.warn({ channel: channel.name, reason }, 'text channel failed; trying the next');
      failure = failureOf(channel, null, 'network', reason);
      continue;
    }

    const status = res.statusCode ?? 502;
    if (status < 200 || status >= 300) {
      const text = await waitOn(readAll(res, limits.timeoutMs, 1024 * 1024)).catch(() => Buffer.alloc(0));
      const parsed = parseJson(text);
      if (!isFailoverStatus(status)) {
        health.succeeded(channel.name);
        const headers = replyHeaders(res);
        if (protocol.isErrorBody(parsed)) return { status, headers, body: text, upstreamNs };
        return {
          status,
          headers: { ...headers, 'content-type': 'application/json' },
          body: Buffer.from(JSON.stringify(protocol.errorBody(status, `Upstream error: ${text.toString('utf8').slice(0, 300)}`))),
          upstreamNs,
        };
      }
      const reason = `HTTP ${status}`;
      health.failed(channel.name, reason, restFor(res));
      req.log.warn({ channel: channel.name, status }, 'text channel failed; trying the next');
      failure = failureOf(channel, status, status === 429 ? '429' : status >= 500 ? '5xx' : 'auth', reason, { headers: replyHeaders(res), body: parsed });
      continue;
    }

    if (!req.stream) {
      let text: Buffer;
      try {
        text = await waitOn(readAll(res, limits.timeoutMs));
      } catch (err) {
        const reason = `response broke off (${(err as Error).message})`;
        health.failed(channel.name, reason);
        failure = failureOf(channel, null, 'network', reason);
        continue;
      }
      health.succeeded(channel.name);
      if (protocol.mapAnswer) text = protocol.mapAnswer(text);
      const usage = protocol.usageOfBody(parseJson(text));
      if (!usage) req.log.warn({ channel: channel.name }, 'upstream answer carried no usage');
      await req.onUsage(channel, {
        usage: usage ?? emptyUsage(),
        reported: usage !== null,
        outcome: req.signal.aborted ? 'aborted' : usage ? 'completed' : 'failed',
        outputBytes: usage ? 0 : protocol.outputBytesOfBody(text.toString('utf8')),
      });
      if (req.signal.aborted) throw new ClientGoneError();
      return { status, headers: replyHeaders(res), body: text, upstreamNs };
    }

    const first = await waitOn(firstChunk(res, limits.idleMs));
    if (req.signal.aborted) {
      res.destroy();
      // The provider accepted the request and began its answer: it bills that, so does the gateway.
      await req.onUsage(channel, { usage: emptyUsage(), reported: false, outcome: 'aborted', outputBytes: 0 });
      throw new ClientGoneError();
    }
    if (!first) {
      const reason = 'stream ended before its first byte';
      health.failed(channel.name, reason);
      failure = failureOf(channel, null, 'empty_stream', reason);
      continue;
    }
    health.succeeded(channel.name);
    const tap = protocol.tap(req.clientWantsUsage);
    const out = relay(res, first, tap, limits.idleMs, req.signal, (outcome) =>
      req.onUsage(channel, { usage: tap.usage, reported: outcome === 'completed' && !isEmpty(tap.usage), outcome, outputBytes: tap.relayedOutputBytes }),
    );
    return {
      status,
      headers: { ...replyHeaders(res), 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' },
      body: out,
      upstreamNs,
    };
  }

  return { ...exhausted(protocol, failure), upstreamNs };
}

/** Every channel failed: the last upstream answer when there was one, else a 502. */
function exhausted(protocol: TextProtocol, failure: Failure | null): Omit<ProxyReply, 'upstreamNs'> {
  const json = (status: number, message: string, headers: Record<string, string> = {}): Omit<ProxyReply, 'upstreamNs'> => ({
    status,
    headers: { ...headers, 'content-type': 'application/json' },
    body: Buffer.from(JSON.stringify(protocol.errorBody(status, message))),
  });
  if (!failure) return json(502, 'No upstream channel is available for this model.');
  if (failure.status === 401 || failure.status === 403) {
    return json(502, "The upstream provider refused the gateway's credentials; the operator must check the channel's key.");
  }
  if (failure.status !== null) {
    if (protocol.isErrorBody(failure.body)) {
      return { status: failure.status, headers: failure.headers, body: Buffer.from(JSON.stringify(failure.body)) };
    }
    return json(failure.status, `The upstream provider answered ${failure.reason}.`, failure.headers);
  }
  return json(502, `The upstream provider could not be reached (${failure.reason}).`);
}
