import type { Middleware } from 'koa';
import { anthropicErrorType } from '../../upstreams/anthropic/mapping';
import { GatewayError } from '../errors';
import type { GatewayState } from '../context';
import { toGatewayError } from './errors';

export interface AnthropicErrorBody {
  type: 'error';
  error: { type: string; message: string };
  request_id: string;
}

export function anthropicErrorBody(err: GatewayError, requestId: string): AnthropicErrorBody {
  return { type: 'error', error: { type: anthropicErrorType(err.status), message: err.message }, request_id: requestId };
}

/**
 * The messages endpoint answers every failure (auth, body, validation, routing) in
 * Anthropic's shape and status mapping, so the Anthropic SDK raises its own error classes.
 */
export function anthropicErrors(bodyLimit: number): Middleware<GatewayState> {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      let mapped = toGatewayError(err, bodyLimit);
      if (!mapped) {
        ctx.state.log.error({ err }, 'unhandled error');
        mapped = new GatewayError(500, 'api_error', `Internal error; quote request id ${ctx.state.requestId} when reporting it.`);
      }
      ctx.status = mapped.status;
      for (const [k, v] of Object.entries(mapped.headers)) ctx.set(k, v);
      ctx.set('request-id', ctx.state.requestId);
      ctx.body = anthropicErrorBody(mapped, ctx.state.requestId);
    }
  };
}
