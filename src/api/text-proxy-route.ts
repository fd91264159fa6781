import type { ParameterizedContext } from 'koa';
import { channelsFor, type TextChannel } from '../config/channels';
import type { ChannelHealth } from '../proxy/channel-health';
import { ClientGoneError, proxyText, type ProxyLimits, type TextProtocol } from '../proxy/text-proxy';
import type { BalanceCache } from '../store/balance-cache';
import type { UsageRecorder } from '../store/usage';
import type { GatewayState } from './context';
import { InsufficientQuotaError } from './errors';

export interface TextRouteDeps {
  textChannels: readonly TextChannel[];
  channelHealth: ChannelHealth;
  usage: UsageRecorder;
  /** Balances for the "anything left" check before a text call. */
  balances: BalanceCache;
  textLimits: ProxyLimits;
}

export interface TextCall {
  protocol: TextProtocol;
  /** textChannelsFor(protocol, model), which the route already looked up to refuse a model no channel serves. */
  channels: readonly TextChannel[];
  endpoint: 'messages' | 'chat';
  model: string;
  body: Record<string, unknown>;
  stream: boolean;
  clientWantsUsage: boolean;
  passthroughHeaders: Record<string, string>;
}

/** The channels of the protocol's type that serve a model, best first. */
export function textChannelsFor(deps: TextRouteDeps, protocol: TextProtocol, model: string): TextChannel[] {
  return channelsFor(deps.textChannels.filter((c) => c.type === protocol.channelType), model);
}

/**
 * Answers a text request from the proxy: status, headers and body (bytes or a stream) as
 * the chosen upstream gave them, and one usage record per answered request.
 */
export async function answerFromUpstream(ctx: ParameterizedContext<GatewayState>, deps: TextRouteDeps, call: TextCall): Promise<void> {
  const keyId = ctx.state.apiKey!.id;
  // A fresh cached balance answers without a promise; only a stale one reads the store.
  if (ctx.state.apiKey!.limited) requireBalance(deps, keyId, deps.balances.fresh(keyId) ?? (await deps.balances.balance(keyId)));
  const abort = new AbortController();
  // The response's close before it finished means the client left: stop the upstream too.
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
        raw: ctx.state.rawBody ?? Buffer.from(JSON.stringify(call.body)),
        stream: call.stream,
        clientWantsUsage: call.clientWantsUsage,
        passthroughHeaders: call.passthroughHeaders,
        signal: abort.signal,
        log: ctx.state.log,
        onUsage: (channel, usage, outcome) => {
          deps.usage.record({ ...usage, requestId: ctx.state.requestId, keyId, model: call.model, channel: channel.name, endpoint: call.endpoint, streamed: call.stream, outcome });
          if (outcome !== 'completed') ctx.state.log.info({ channel: channel.name, outcome }, 'text answer did not complete');
        },
      },
      deps.channelHealth,
      deps.textLimits,
    );
    ctx.status = reply.status;
    ctx.set(reply.headers);
    ctx.body = reply.body;
  } catch (err) {
    if (!(err instanceof ClientGoneError)) throw err;
    ctx.state.log.info('client left before the upstream answered');
    ctx.respond = false;
  }
}

/**
 * A text answer's price is known only afterwards, so the check before the upstream call is
 * "anything left": the balance (BalanceCache: re-read at most every second) less this
 * process's usage not yet written. A key may end slightly below zero by its last answers; its
 * next request is refused.
 */
function requireBalance(deps: TextRouteDeps, keyId: string, balance: number): void {
  const left = balance - deps.usage.pendingFor(keyId);
  if (left <= 0) {
    throw new InsufficientQuotaError(`The key's balance is ${left} credits, so it cannot pay for this request. Ask the gateway operator to add quota (POST /admin/keys/{id}/quota).`);
  }
}
