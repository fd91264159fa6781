import type { Middleware } from 'koa';
import type { AuthFailureLimit } from '../../limits/auth-failures';
import type { GatewayState } from '../context';
import { RateLimitedError } from '../errors';

/** What the key middleware needs to limit failed authentications per client address (on ctx.state). */
export interface AuthFailureGate {
  limit: AuthFailureLimit;
  /** The client address is the last X-Forwarded-For entry (TRUST_PROXY). */
  trustProxy: boolean;
}

/**
 * Hands the per-address limit of failed authentications to the key middleware of every route
 * family (bearerAuth, anyKeyAuth), including those mounted by route files, through ctx.state.
 * One shared object: nothing is allocated per request.
 */
export function authFailureGate(gate: AuthFailureGate | null): Middleware<GatewayState> {
  return (ctx, next) => {
    if (gate) ctx.state.authFailures = gate;
    return next();
  };
}

/** The 429 of an address past its budget of failed authentications, for keys and the operator's tokens alike. */
export function addressRefused(gate: AuthFailureGate, waitSeconds: number): RateLimitedError {
  return new RateLimitedError(
    `Too many failed authentications from this address (at most ${gate.limit.perMinute} a minute). Retry after ${waitSeconds} s.`,
    waitSeconds,
  );
}
