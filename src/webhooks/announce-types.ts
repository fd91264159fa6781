/**
 * The terminal-announce activity's contract, for the workflows that call it (video tasks,
 * background responses). Pure types: imported by workflow code.
 */
import type { TaskState } from '../tasks/task';
import type { TerminalOutcome } from './event';

/** The activity's name, for proxyLocalActivities callers that pick it by name. */
export const ANNOUNCE_ACTIVITY = 'announceTerminal';

interface AnnounceCommon {
  /** The task's or response's public id. */
  id: string;
  /** The key that owns it: its webhook endpoint and secret are used. */
  keyId: string;
  /** The request's callback_url, which wins over the key's endpoint. */
  callbackUrl?: string;
  outcome: TerminalOutcome;
}

/**
 * A video task carries its state: the activity renders it as its family's status view (it
 * signs the video_url, which workflow code cannot). A response carries its data as the
 * owner would read it from GET /v1/responses/{id}.
 */
export type AnnounceInput = (AnnounceCommon & { subject: 'video'; state: TaskState }) | (AnnounceCommon & { subject: 'response'; data: unknown });

/** The event made (or found: an announce that runs again finds the first), or why there is none. */
export type AnnounceResult = { eventId: string } | { skipped: 'no_target' | 'no_secret' };

export interface WebhookDeliveryInput {
  eventId: string;
  /** Backoff of delivery attempts (WEBHOOK_RETRY_INITIAL_MS doubling up to WEBHOOK_RETRY_MAX_MS). */
  retryInitialMs: number;
  retryMaxMs: number;
  /** WEBHOOK_DELIVERY_HOURS in ms: after this long without a 2xx the event is given up (state failed). */
  deliverForMs: number;
  /** One attempt's start-to-close (WEBHOOK_TIMEOUT_MS and room for two writes): a worker that died mid-attempt is noticed after it. Absent in early histories: 2 minutes. */
  attemptTimeoutMs?: number;
}

/** The delivery workflow's type name (its id is the event id). */
export const WEBHOOK_DELIVERY_WORKFLOW = 'webhookDelivery';

/** Why an event can never be delivered (its target refused by the guard, the event or secret gone): not retried. */
export const UNDELIVERABLE = 'WebhookUndeliverable';
