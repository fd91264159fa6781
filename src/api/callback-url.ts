import type { Env } from '../config/env';
import type { WebhookStore } from '../store/webhooks';
import { webhookUrlProblem } from '../webhooks/target-url';
import { InvalidRequestError } from './errors';

/**
 * A create request's callback_url, checked before anything is stored or charged: https (unless
 * WEBHOOK_ALLOW_HTTP), not a private or loopback address (unless WEBHOOK_ALLOW_PRIVATE; the
 * delivery checks the resolved addresses again at every attempt), and a key with a signing
 * secret (an event nobody can verify is not sent).
 */
export async function checkedCallbackUrl(value: string | undefined, keyId: string, env: Env, webhooks: WebhookStore): Promise<string | undefined> {
  if (value === undefined) return undefined;
  const problem = webhookUrlProblem(value, { allowHttp: env.WEBHOOK_ALLOW_HTTP, allowPrivate: env.WEBHOOK_ALLOW_PRIVATE });
  if (problem) throw new InvalidRequestError(`callback_url ${problem}.`, 'callback_url', 'invalid_callback_url');
  if ((await webhooks.signingSecrets(keyId)).length === 0) {
    throw new InvalidRequestError(
      'callback_url needs a webhook signing secret for this key, and it has none: the operator makes one (PUT /admin/keys/{id}/webhook or POST /admin/keys/{id}/webhook/rotate).',
      'callback_url',
      'webhook_secret_missing',
    );
  }
  return value;
}
