import { z } from 'zod';
import { describes } from '../describes';
import type { WebhookAttemptAnswer, WebhookDeliveryAnswer, WebhookEndpointAnswer } from '../../views/webhooks';
import { unixSeconds } from './common';

/** Completion webhooks' answers (routes/webhooks.ts; README "Completion webhooks"). */

export const webhookEndpoint = describes<WebhookEndpointAnswer>()(
  z.object({
    object: z.literal('webhook_endpoint'),
    key_id: z.string(),
    url: z.string().nullable().meta({ description: "The key's default target; null: only requests' callback_url are called." }),
    secret_hint: z.string().nullable().meta({ description: 'The signing secret, shortened (`whsec_...abcd`); null: the key has none yet.' }),
    previous_secret_expires_at: unixSeconds.nullable().meta({ description: 'Until then deliveries are signed with the previous secret too.' }),
    updated_at: unixSeconds.nullable(),
  }),
);

export const webhookEndpointWithSecret = webhookEndpoint.extend({
  secret: z
    .string()
    .nullable()
    .meta({ description: 'The signing secret (`whsec_<base64>`), shown only in the answer that made it; null when this call made none.' }),
});

const attempt = describes<WebhookAttemptAnswer>()(
  z.object({
    attempt: z.int().meta({ description: "Temporal's attempt number of the delivery step (1, 2, ...)." }),
    at_ms: z.int().meta({ description: 'Unix time in milliseconds.' }),
    http_status: z
      .int()
      .nullable()
      .meta({ description: "The receiver's HTTP status; null when none came (connection refused, timeout, refused by the URL guard)." }),
    error: z.string().nullable().meta({ description: 'Why the attempt failed; null for a 2xx.' }),
    duration_ms: z.int(),
  }),
);

const delivery = describes<WebhookDeliveryAnswer>()(
  z.object({
    id: z.string().meta({ description: 'The event id (the `webhook-id` header).' }),
    object: z.literal('webhook_event'),
    type: z.string().meta({ description: 'video.completed, video.failed, video.cancelled, response.completed, ...' }),
    subject_id: z.string().meta({ description: 'The task or response the event is about.' }),
    url: z.string(),
    state: z.enum(['pending', 'delivered', 'failed']).meta({ description: 'failed: no 2xx within WEBHOOK_DELIVERY_HOURS, or the target may never be called.' }),
    created_at: unixSeconds,
    finished_at: unixSeconds.nullable(),
    attempts: z.array(attempt).meta({ description: 'Oldest first.' }),
  }),
);

export const webhookDeliveryList = z.object({ object: z.literal('list'), key_id: z.string(), data: z.array(delivery).meta({ description: 'Newest first.' }) });
