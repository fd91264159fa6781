import { createHash } from 'node:crypto';
import type { ParameterizedContext } from 'koa';
import type { BillingStore } from '../billing/ledger';
import type { CreateIds, IdempotencyStore } from '../store/idempotency';
import { callerKey, type GatewayState } from './context';
import { ConflictError, GatewayError, InvalidRequestError } from './errors';
import { fromDomainError } from './domain-errors';

export interface IdempotencyDeps {
  idempotency: IdempotencyStore;
  billing: BillingStore;
}

export interface IdempotentCreate<T> {
  /** What makes two requests the same: the endpoint and what it parsed (fields, file digests). */
  fingerprint: unknown;
  /** New ids for a create. */
  fresh: () => CreateIds;
  /** The longest the create may take: a repeat waits for it this long before taking over. */
  leaseSeconds: number;
  create: (ids: CreateIds) => Promise<T>;
  /** The answer for ids whose create already ran (or may have), or null when it made nothing readable. */
  existing: (ids: CreateIds) => Promise<T | null>;
}

/** How long a repeat waits for the create it repeats before it answers 409 (the SDKs retry a 409). */
const BUSY_WAIT_MS = 10_000;
const BUSY_POLL_MS = 200;

/** JSON with sorted keys: the same body sent twice with its fields in another order is the same request. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * Runs a create under the request's Idempotency-Key, when it has one (store/idempotency.ts):
 * the same key and request within 24 hours answer the same task and charge once; the same key
 * with another request is a 422; a repeat that arrives while the first still runs waits for it
 * (then 409, which the SDKs retry). A create refused before it made anything (a 4xx) frees the
 * key; one that failed in a way that may have left a task keeps its ids for the repeat.
 */
export async function idempotentCreate<T>(ctx: ParameterizedContext<GatewayState>, deps: IdempotencyDeps, op: IdempotentCreate<T>): Promise<T> {
  const header = ctx.get('idempotency-key');
  if (header === '') return op.create(op.fresh());
  if (header.length > 255 || !/^[\x21-\x7e]+$/.test(header)) {
    throw new InvalidRequestError('Idempotency-Key must be 1 to 255 visible ASCII characters.', 'Idempotency-Key', 'invalid_idempotency_key');
  }
  const keyId = callerKey(ctx.state).id;
  const fingerprint = createHash('sha256').update(canonicalJson(op.fingerprint)).digest('hex');
  const deadline = Date.now() + BUSY_WAIT_MS;
  for (;;) {
    const claim = await deps.idempotency.claim(keyId, header, fingerprint, op.fresh(), op.leaseSeconds);
    if (claim.kind === 'mismatch') {
      throw new GatewayError(
        422,
        'invalid_request_error',
        'This Idempotency-Key was already used for a different request in the last 24 hours. Use a new key for a new request.',
        'Idempotency-Key',
        'idempotency_key_reused',
      );
    }
    if (claim.kind === 'done') {
      const answer = await op.existing(claim.ids);
      if (answer === null)
        throw new ConflictError('The task made for this Idempotency-Key is no longer readable. Use a new key.', 'Idempotency-Key', 'idempotency_key_expired');
      ctx.set('idempotent-replayed', 'true');
      return answer;
    }
    if (claim.kind === 'busy') {
      if (Date.now() >= deadline) {
        throw new GatewayError(
          409,
          'invalid_request_error',
          'A request with this Idempotency-Key is still being processed. Retry in a moment.',
          'Idempotency-Key',
          'idempotency_key_in_use',
          { 'retry-after': '1' },
        );
      }
      await new Promise((r) => setTimeout(r, BUSY_POLL_MS));
      continue;
    }
    let ids = claim.ids;
    if (claim.takeover) {
      // The create before may have made its task: answer that rather than make another.
      const answer = await op.existing(ids);
      if (answer !== null) {
        await deps.idempotency.done(keyId, header, ids);
        ctx.set('idempotent-replayed', 'true');
        return answer;
      }
      // Its charge was refunded meanwhile (the start was lost): that task id may not run; use new ones.
      const state = await deps.billing.chargeState(ids.taskId);
      if (state === 'refunded') ids = op.fresh();
    }
    try {
      const result = await op.create(ids);
      await deps.idempotency.done(keyId, header, ids);
      return result;
    } catch (err) {
      // A refusal (4xx) leaves nothing behind: the same key may try again. Anything else may have started the work.
      const mapped = err instanceof GatewayError ? err : fromDomainError(err);
      if (mapped && mapped.status < 500) await deps.idempotency.forget(keyId, header);
      else await deps.idempotency.release(keyId, header, ids);
      throw err;
    }
  }
}
