import type { ParameterizedContext } from 'koa';
import type { PriceTable } from '../billing/prices';
import { estimateUsage, textCeiling, type TextRequestShape } from '../billing/text-ceiling';
import { channelsFor, type TextChannel } from '../config/channels';
import type { ChannelHealth } from '../proxy/channel-health';
import { ClientGoneError, proxyText, type ProxyLimits, type RelayedStream, type TextProtocol, type UsageReport } from '../proxy/text-proxy';
import { InsufficientBalance } from '../billing/ledger';
import { TooManyTextRequests, type TextHoldSource } from '../billing/text-holds';
import type { UsageRecorder } from '../billing/usage';
import { callerKey, type GatewayState } from './context';
import { InsufficientQuotaError, RateLimitedError } from './errors';
import type { PerKeySlots } from '../limits/per-key-slots';
import { metrics } from '../metrics/metrics';

export interface TextRouteDeps {
  textChannels: readonly TextChannel[];
  channelHealth: ChannelHealth;
  usage: UsageRecorder;
  holds: TextHoldSource;
  /** Streams open per key in this process (MAX_STREAMS_PER_KEY): text, and video chat completions. */
  streams: PerKeySlots;
  prices: PriceTable;
  textLimits: ProxyLimits & {
    /** Output tokens held (and sent upstream) for a chat request that names no limit. */
    defaultMaxTokens: number;
    /** The longest an answer waits for its usage to be written before it ends anyway. */
    settleWaitMs: number;
  };
}

export interface TextCall {
  protocol: TextProtocol;
  /** textChannelsFor(protocol, model), which the route already looked up to refuse a model no channel serves. */
  channels: readonly TextChannel[];
  endpoint: 'messages' | 'chat' | 'responses';
  model: string;
  body: Record<string, unknown>;
  /** False when the route changed the body, so the client's bytes must not be forwarded as they are. */
  rawIsBody?: boolean;
  /** Input tokens the provider adds from its own store (TextRequestShape.contextTokens). */
  contextTokens?: number;
  stream: boolean;
  clientWantsUsage: boolean;
  passthroughHeaders: Record<string, string>;
  /**
   * The answer came to its end on `channel` (before it is billed and before the client's answer
   * ends): the Responses API records the response here. A failure is logged, never the client's.
   */
  onAnswer?(channel: TextChannel): Promise<void>;
}

/** Seconds a client refused for too many text requests in flight waits before trying again. */
const IN_FLIGHT_RETRY_SECONDS = 1;

/** The channels of the protocol's type that serve a model, best first. */
export function textChannelsFor(deps: Pick<TextRouteDeps, 'textChannels'>, protocol: TextProtocol, model: string): TextChannel[] {
  return channelsFor(
    deps.textChannels.filter((c) => c.type === protocol.channelType),
    model,
  );
}

/**
 * Answers a text request from the proxy: status, headers and body (bytes or a stream) as the
 * chosen upstream gave them. Before the upstream call the request's worst-case price is held
 * against the key (402 when the key cannot cover it, 429 past its text requests in flight);
 * when the answer ends its settlement at the real price is made durable (UsageRecorder) before
 * the answer's last byte.
 */
export async function answerFromUpstream(ctx: ParameterizedContext<GatewayState>, deps: TextRouteDeps, call: TextCall): Promise<void> {
  const key = callerKey(ctx.state);
  // The client's bytes, unless the route changed the body.
  const raw = (call.rawIsBody === false ? undefined : ctx.state.rawBody) ?? Buffer.from(JSON.stringify(call.body));
  const shape: TextRequestShape = { endpoint: call.endpoint, body: call.body, bodyBytes: raw.length, contextTokens: call.contextTokens };
  const ceiling = textCeiling(deps.prices, call.model, shape, deps.textLimits.defaultMaxTokens);

  const releaseStream = call.stream ? takeStreamSlot(deps.streams, key.id) : null;
  let holdId: string;
  try {
    holdId = await deps.usage.afterSettled(
      key.id,
      () =>
        deps.holds.hold({
          keyId: key.id,
          requestId: ctx.state.requestId,
          model: call.model,
          endpoint: call.endpoint,
          streamed: call.stream,
          amount: ceiling.credits,
        }),
      (err) => err instanceof InsufficientBalance || err instanceof TooManyTextRequests,
    );
  } catch (err) {
    releaseStream?.();
    metrics.holds.inc({
      outcome: err instanceof InsufficientBalance ? 'refused_balance' : err instanceof TooManyTextRequests ? 'refused_in_flight' : 'failed',
    });
    throw holdRefusal(err, ceiling);
  }
  metrics.holds.inc({ outcome: 'placed' });

  let settled: Promise<void> | null = null;
  const settle = (channel: TextChannel | null, report: UsageReport | null): Promise<void> => {
    settled ??= (async () => {
      const usage = report === null ? null : report.reported ? report.usage : estimateUsage(report.usage, report.outputBytes, shape);
      const write = deps.usage.settle({
        holdId,
        keyId: key.id,
        usage: usage &&
          report && {
            ...usage,
            requestId: ctx.state.requestId,
            keyId: key.id,
            model: call.model,
            channel: channel?.name ?? '',
            endpoint: call.endpoint,
            streamed: call.stream,
            outcome: report.outcome,
          },
      });
      if (report && report.outcome !== 'completed')
        ctx.state.log.info({ channel: channel?.name, outcome: report.outcome, estimated: !report.reported }, 'text answer did not complete');
      // A store that is away must not hold the answer open: the write goes on in the background,
      // and if this process dies first the hold is settled in full by another.
      await waitAtMost(write, deps.textLimits.settleWaitMs);
      releaseStream?.();
    })();
    return settled;
  };

  const abort = new AbortController();
  // The response's close before it finished means the client left.
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) abort.abort();
  });
  try {
    const reply = await proxyText(
      {
        protocol: call.protocol,
        channels: call.channels,
        model: call.model,
        body: call.body,
        raw,
        stream: call.stream,
        clientWantsUsage: call.clientWantsUsage,
        passthroughHeaders: call.passthroughHeaders,
        signal: abort.signal,
        log: ctx.state.log,
        onUsage: call.onAnswer ? (channel, report) => answered(call, channel, ctx).then(() => settle(channel, report)) : settle,
      },
      deps.channelHealth,
      deps.textLimits,
    );
    // No answer was produced (an upstream error, every channel failed): nothing to bill.
    if (!settled && Buffer.isBuffer(reply.body)) void settle(null, null);
    ctx.status = reply.status;
    ctx.set(reply.headers);
    const elapsedNs = process.hrtime.bigint() - ctx.state.receivedAt;
    // OpenAI's own header: how long the answer took to begin (the whole answer, when not streamed).
    if (call.endpoint !== 'messages') ctx.set('openai-processing-ms', String(Math.round(Number(elapsedNs) / 1e6)));
    // What of that the gateway itself took, the waits on upstreams left out: a client tells the
    // gateway's cost from the provider's without the gateway's metrics (LiteLLM has the like).
    const overheadNs = elapsedNs - reply.upstreamNs;
    ctx.set('x-gateway-overhead-ms', (Number(overheadNs) / 1e6).toFixed(2));
    metrics.textAdded.observe({ endpoint: call.endpoint, stream: String(call.stream) }, Number(overheadNs) / 1e9);
    if (Buffer.isBuffer(reply.body)) ctx.body = reply.body;
    else {
      metrics.streamFirstByte.observe({ endpoint: call.endpoint }, Number(elapsedNs) / 1e9);
      sendStream(ctx, reply.body);
    }
  } catch (err) {
    if (!settled) void settle(null, null);
    if (!(err instanceof ClientGoneError)) throw err;
    ctx.state.log.info('client left before the upstream answered');
    ctx.respond = false;
  }
}

/**
 * Sends a streamed answer to the client's response itself rather than as Koa's body: Koa
 * pipes a stream body with stream.pipeline, whose plumbing per stream (end-of-stream watchers
 * on both sides, an AbortController) cost a text stream about 17 % of the gateway's CPU
 * (bench:text-ab), and the relay writes to the response directly. The status and headers are
 * already on the response (Koa's setters write them through); Koa's default content type for
 * a stream is kept.
 */
function sendStream(ctx: ParameterizedContext<GatewayState>, answer: RelayedStream): void {
  ctx.respond = false;
  const res = ctx.res;
  // The client left while the upstream was being asked: nothing to send.
  if (res.destroyed) {
    answer.abandon();
    return;
  }
  if (!res.hasHeader('content-type')) res.setHeader('content-type', 'application/octet-stream');
  // A write to a socket that broke: the response closes next, which the relay takes as the client leaving.
  res.on('error', () => res.destroy());
  answer.sendTo(res);
}

/** Runs the call's onAnswer hook; what it fails at is logged and does not keep the answer from being billed. */
async function answered(call: TextCall, channel: TextChannel, ctx: ParameterizedContext<GatewayState>): Promise<void> {
  try {
    await call.onAnswer?.(channel);
  } catch (err) {
    ctx.state.log.warn({ err: (err as Error).message, channel: channel.name }, 'recording the answer failed');
  }
}

/** One of the key's stream slots (its release), or a 429 when it has MAX_STREAMS_PER_KEY open. */
export function takeStreamSlot(streams: PerKeySlots, keyId: string): () => void {
  const release = streams.tryAcquire(keyId);
  if (!release) {
    throw new RateLimitedError(
      `This key already has ${streams.maxPerKey} streams open, its limit. Retry once one of them has ended.`,
      IN_FLIGHT_RETRY_SECONDS,
      'too_many_streams',
    );
  }
  return release;
}

/** A refused hold as the client should hear it. */
function holdRefusal(err: unknown, ceiling: { inputTokens: number; outputTokens: number; credits: number }): unknown {
  if (err instanceof InsufficientBalance) {
    return new InsufficientQuotaError(
      `This request can cost up to ${ceiling.credits} credits (about ${ceiling.inputTokens} input tokens at most, and ${ceiling.outputTokens} output tokens at most: max_tokens), ` +
        `and the key has ${err.balance} credits available. Lower max_tokens, or ask the gateway operator to add quota (POST /admin/keys/{id}/quota).`,
    );
  }
  if (err instanceof TooManyTextRequests) {
    return new RateLimitedError(
      `This key already has ${err.limit} text requests in flight, its limit. Retry once one of them has finished.`,
      IN_FLIGHT_RETRY_SECONDS,
      'too_many_requests_in_flight',
    );
  }
  return err;
}

/** Resolves when `promise` settles, or after `ms`, whichever comes first (one promise, one timer: it runs per request). */
function waitAtMost(promise: Promise<unknown>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    promise.then(done, done);
  });
}
