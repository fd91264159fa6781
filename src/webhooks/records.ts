/** What the webhook store holds, as plain types (no Node imports: the console's answer types build on them). */
import type { WebhookPayload } from './event';

export interface WebhookEndpointView {
  keyId: string;
  /** The key's default target; null: only requests' callback_url are called. */
  url: string | null;
  secretHint: string;
  /** Unix seconds until which the previous secret also signs; null when none is live. */
  previousSecretExpiresAt: number | null;
  updatedAt: number;
}

export type WebhookEventState = 'pending' | 'delivered' | 'failed';

export interface WebhookEventRecord {
  id: string;
  keyId: string;
  type: string;
  subjectId: string;
  url: string;
  payload: WebhookPayload;
  state: WebhookEventState;
  createdAt: number;
  finishedAt: number | null;
}

export interface WebhookAttemptRecord {
  eventId: string;
  attempt: number;
  /** Unix ms. */
  at: number;
  httpStatus: number | null;
  error: string | null;
  durationMs: number;
}
