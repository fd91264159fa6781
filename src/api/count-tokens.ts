/**
 * POST /v1/messages/count_tokens, answered by the model's native channels: the first (in
 * the order failover uses) that answers; a channel that cannot be reached, or answers 429 or
 * 5xx, hands over to the next. Free, as at Anthropic: no hold and no usage record, but the
 * key's rate limit applies like on every call.
 */
import type { ParameterizedContext } from 'koa';
import type { TextChannel } from '../config/channels';
import { ANTHROPIC_VERSION } from '../providers/anthropic/protocol';
import { postText, readAll, TextConnectionError } from '../providers/text-http';
import type { ChannelHealth } from '../proxy/channel-health';
import type { GatewayState } from './context';
import { GatewayError } from './errors';

/** An answer of the channel is taken as is: only these fail over. */
const failsOver = (status: number) => status === 429 || status >= 500;

export async function countTokensUpstream(
  ctx: ParameterizedContext<GatewayState>,
  channels: readonly TextChannel[],
  health: ChannelHealth,
  body: Record<string, unknown> & { model: string },
  timeoutMs: number,
): Promise<void> {
  const beta = ctx.get('anthropic-beta');
  let last = 'no channel answered';
  for (const channel of health.order(channels)) {
    const abort = new AbortController();
    try {
      const res = await postText({
        url: `${channel.baseUrl}/v1/messages/count_tokens`,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'x-api-key': channel.apiKey,
          'anthropic-version': ANTHROPIC_VERSION,
          ...(beta ? { 'anthropic-beta': beta } : {}),
        },
        body: Buffer.from(JSON.stringify({ ...body, model: channel.models[body.model] ?? body.model })),
        signal: abort.signal,
        timeoutMs,
      });
      const text = await readAll(res, timeoutMs, 1024 * 1024);
      const status = res.statusCode ?? 502;
      if (failsOver(status)) {
        health.failed(channel.name, `count_tokens answered ${status}`);
        last = `the channel answered ${status}`;
        continue;
      }
      health.succeeded(channel.name);
      ctx.status = status;
      ctx.type = 'application/json';
      ctx.body = text;
      return;
    } catch (err) {
      if (!(err instanceof TextConnectionError)) throw err;
      abort.abort();
      health.failed(channel.name, err.message);
      last = err.message;
    }
  }
  throw new GatewayError(502, 'api_error', `No native channel could count the tokens: ${last}.`, null, 'upstream_unavailable');
}
