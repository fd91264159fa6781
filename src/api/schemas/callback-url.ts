import { z } from 'zod';

/** A create request's completion-webhook target (README "Completion webhooks"); checked further by callbackUrlOf. */
export const callbackUrlField = z.string().min(1).max(2048).optional().meta({
  description:
    "Extension: an https:// URL that receives a signed completion webhook (Standard Webhooks) when the task ends; overrides the key's webhook endpoint. The key must have a webhook secret.",
});
