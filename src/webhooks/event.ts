/**
 * The event a completion webhook carries. Pure: imported by the announce activity and the views.
 * The id is derived from what happened (subject, its id, its outcome), so an announce that runs
 * again (a replayed workflow, a retried activity) names the same event and never makes a second.
 */
export type WebhookSubject = 'video' | 'response';

/** How a task or response ended, as the event type says it. */
export type TerminalOutcome = 'completed' | 'failed' | 'cancelled' | 'incomplete';

export type WebhookEventType = `${WebhookSubject}.${TerminalOutcome}`;

/** The body of every delivery: the type, when the event was made (ISO 8601), and the subject's status view. */
export interface WebhookPayload {
  type: WebhookEventType;
  timestamp: string;
  data: unknown;
}

export function eventType(subject: WebhookSubject, outcome: TerminalOutcome): WebhookEventType {
  return `${subject}.${outcome}`;
}

/** `evt_<subject>_<id>_<outcome>`: readable in the Temporal UI (it is the delivery workflow's id too). */
export function eventId(subject: WebhookSubject, id: string, outcome: TerminalOutcome): string {
  return `evt_${subject}_${id}_${outcome}`;
}
