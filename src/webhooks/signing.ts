/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): a delivery carries
 * `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature`, which is
 * `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` per live secret, space-separated
 * (two while a rotated secret's predecessor is still valid). Secrets are shown as
 * `whsec_<base64 of the key bytes>`; the HMAC key is the decoded bytes.
 */
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;

/** A new signing secret in its `whsec_` form. */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

/** The HMAC key bytes of a `whsec_` secret (a bare base64 secret is accepted too, as the reference libraries do). */
export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

/** One `v1,<base64>` signature of the message under one secret. */
export function signV1(secret: string, id: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', secretKey(secret)).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `v1,${mac}`;
}

export interface WebhookHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/** The three headers of one delivery, signed with every given secret (current first). */
export function signedHeaders(secrets: readonly string[], id: string, timestamp: number, body: string): WebhookHeaders {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((s) => signV1(s, id, timestamp, body)).join(' '),
  };
}

/** What an operator or console shows of a secret: its prefix and last characters only. */
export function secretHint(secret: string): string {
  return `${SECRET_PREFIX}...${secret.slice(-4)}`;
}
