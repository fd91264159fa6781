import type { Middleware } from 'koa';
import { anthropicErrorType } from '../../providers/anthropic/mapping';
import type { GatewayError } from '../errors';
import type { GatewayState } from '../context';
import { respondWithError } from './errors';

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
    // Anthropic's header, on every answer (success included): what its SDK reads as `_request_id`.
    ctx.set('request-id', ctx.state.requestId);
    try {
      await next();
    } catch (err) {
      respondWithError(ctx, err, bodyLimit, (mapped) => anthropicErrorBody(mapped, ctx.state.requestId), 'api_error');
    }
  };
}
