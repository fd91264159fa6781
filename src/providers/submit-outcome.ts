import { UpstreamError } from './http';

/**
 * What a failed submit (create) attempt says about the provider's job, which decides whether
 * the task may be sent to another channel (README "Video failover"):
 * - `rejected`: the provider refused the input (4xx); sending it anywhere again cannot help.
 * - `not_accepted`: certainly no job: the request never left (connection refused, DNS, TLS,
 *   connect timeout) or the provider answered it with an error that means "not taken"
 *   (429, 500, 501, 503, 408, 425).
 * - `unknown`: the request may have been taken: the connection broke or timed out after it
 *   was sent, a 2xx answer could not be read, or an answer that may come from a proxy that
 *   gave up waiting on a provider still working on it (502, 504) or from an earlier attempt
 *   with the same idempotency key still in progress (409).
 */
export type SubmitOutcome = 'rejected' | 'not_accepted' | 'unknown';

/**
 * Network errors raised before a byte of the request was sent: the connect step failed.
 * Anything else (ECONNRESET, UND_ERR_SOCKET, a request timeout, ...) may come after the send.
 */
const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_NONAME',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'UND_ERR_CONNECT_TIMEOUT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** Provider answers that say the request was not taken. */
const NOT_ACCEPTED_STATUSES: ReadonlySet<number> = new Set([408, 425, 429, 500, 501, 503]);

function isNotSent(code: string): boolean {
  return NOT_SENT_CODES.has(code) || code.startsWith('ERR_SSL_');
}

/** Classifies one failed submit attempt; anything not recognised is `unknown` (the safe side). */
export function submitOutcome(err: unknown): SubmitOutcome {
  if (!(err instanceof UpstreamError)) return 'unknown';
  if (err.kind === 'rejected') return 'rejected';
  if (err.networkCode !== undefined) return isNotSent(err.networkCode) ? 'not_accepted' : 'unknown';
  if (err.status !== undefined && NOT_ACCEPTED_STATUSES.has(err.status)) return 'not_accepted';
  return 'unknown';
}
