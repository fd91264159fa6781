import { z } from 'zod';

/** PUT /admin/keys/{id}/webhook: the key's default completion-webhook target; null keeps only requests' callback_url. */
export const webhookEndpointBody = z.strictObject({
  url: z.string().min(1).max(2048).nullable(),
});

/** ?limit=&event_id= of the delivery lists (admin and the key's own). */
export const webhookDeliveriesQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  event_id: z.string().min(1).max(500).optional(),
});
