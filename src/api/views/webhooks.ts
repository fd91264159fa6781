import type { WebhookAttemptRecord, WebhookEndpointView, WebhookEventRecord } from '../../webhooks/records';

/** A key's completion-webhook settings as the admin API and console show them: never a secret, only its hint. */
export interface WebhookEndpointAnswer {
  object: 'webhook_endpoint';
  key_id: string;
  url: string | null;
  /** Null: the key has no secret yet (PUT or rotate makes one). */
  secret_hint: string | null;
  previous_secret_expires_at: number | null;
  updated_at: number | null;
}

export function webhookEndpointView(keyId: string, endpoint: WebhookEndpointView | null): WebhookEndpointAnswer {
  return {
    object: 'webhook_endpoint',
    key_id: keyId,
    url: endpoint?.url ?? null,
    secret_hint: endpoint?.secretHint ?? null,
    previous_secret_expires_at: endpoint?.previousSecretExpiresAt ?? null,
    updated_at: endpoint?.updatedAt ?? null,
  };
}

export interface WebhookAttemptAnswer {
  attempt: number;
  /** Unix milliseconds: attempts may be closer than a second apart. */
  at_ms: number;
  http_status: number | null;
  error: string | null;
  duration_ms: number;
}

export interface WebhookDeliveryAnswer {
  id: string;
  object: 'webhook_event';
  type: string;
  subject_id: string;
  url: string;
  state: WebhookEventRecord['state'];
  created_at: number;
  finished_at: number | null;
  attempts: WebhookAttemptAnswer[];
}

export function webhookDeliveryView(event: WebhookEventRecord & { attempts: WebhookAttemptRecord[] }): WebhookDeliveryAnswer {
  return {
    id: event.id,
    object: 'webhook_event',
    type: event.type,
    subject_id: event.subjectId,
    url: event.url,
    state: event.state,
    created_at: event.createdAt,
    finished_at: event.finishedAt,
    attempts: event.attempts.map((a) => ({ attempt: a.attempt, at_ms: a.at, http_status: a.httpStatus, error: a.error, duration_ms: a.durationMs })),
  };
}
