/**
 * One completion webhook event = one workflow (workflow id = event id): its delivery attempts
 * are one activity retried by the server with exponential backoff until a 2xx or until the
 * delivery window ends (24 h by default). Every attempt signs afresh and is recorded by the
 * activity itself (webhooks/activities.ts); a receiver down for hours gets the event once back.
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { WebhookActivities } from '../webhooks/activities';
import { UNDELIVERABLE, type WebhookDeliveryInput } from '../webhooks/announce-types';

const { finishWebhookEvent } = proxyLocalActivities<WebhookActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

export async function webhookDelivery(input: WebhookDeliveryInput): Promise<'delivered' | 'failed'> {
  const { deliverWebhook } = proxyActivities<WebhookActivities>({
    // One attempt: the POST's own deadline (WEBHOOK_TIMEOUT_MS, at most 60 s) and two writes.
    startToCloseTimeout: input.attemptTimeoutMs ?? '2m',
    scheduleToCloseTimeout: input.deliverForMs,
    retry: {
      initialInterval: input.retryInitialMs,
      backoffCoefficient: 2,
      maximumInterval: input.retryMaxMs,
      nonRetryableErrorTypes: [UNDELIVERABLE],
    },
  });
  try {
    await deliverWebhook({ eventId: input.eventId });
    return 'delivered';
  } catch {
    // Given up: the window ended or the target can never be called. Recorded for the owner's view.
    await finishWebhookEvent({ eventId: input.eventId, state: 'failed' });
    return 'failed';
  }
}
