/**
 * The completion-webhook activities: announceTerminal (called by a workflow once its subject
 * reached a terminal state: makes the event and starts its delivery workflow), deliverWebhook
 * (one signed POST, recorded) and finishWebhookEvent (an event given up).
 * No secret, body or URL query is ever logged.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { UrlSigner } from '../files/signed-url';
import type { WebhookStore } from '../store/webhooks';
import { videoQueryView } from '../api/views/video-task';
import { videoStatusView } from '../api/views/video-object';
import type { TaskState } from '../tasks/task';
import { UNDELIVERABLE, type AnnounceInput, type AnnounceResult, type WebhookDeliveryInput } from './announce-types';
import { eventId, eventType, type WebhookPayload } from './event';
import { postWebhook, type WebhookPostOptions } from './post';
import { signedHeaders } from './signing';
import { webhookUrlProblem, type WebhookUrlPolicy } from './target-url';

export interface WebhookSettings extends WebhookUrlPolicy, WebhookPostOptions {
  retryInitialMs: number;
  retryMaxMs: number;
  deliverForMs: number;
  /** Finished events (and their attempts) are kept this long, as tasks are (TASK_RETENTION_DAYS). */
  keepDays: number;
}

/** Room in an attempt's start-to-close for its reads and writes of the store, beside the POST's deadline. */
const ATTEMPT_WRITES_MS = 30_000;

/** How often one worker process removes old events: at most once an hour, from an announce. */
const PRUNE_EVERY_MS = 60 * 60 * 1000;

export interface WebhookActivityDeps {
  store: WebhookStore;
  /** Signs video_url in a video's status view. */
  signer: UrlSigner;
  settings: WebhookSettings;
  /** Starts the delivery workflow (id = event id); a workflow already started under that id counts as started. */
  startDelivery: (input: WebhookDeliveryInput) => Promise<void>;
}

/** A video task's status view, of the endpoint family that created it (what its owner polls). */
export function videoEventData(state: TaskState, signer: UrlSigner): unknown {
  return state.endpoint === 'videos' ? videoStatusView(state, signer) : videoQueryView(state, signer);
}

export function createWebhookActivities(deps: WebhookActivityDeps) {
  const { store, settings } = deps;
  let lastPrune = 0;
  return {
    /**
     * Run as a local activity after the terminal state is published. Idempotent: the event id
     * comes from the subject and its outcome, the event row is written once, and a delivery
     * workflow already running (or run) under that id is left alone.
     */
    async announceTerminal(input: AnnounceInput): Promise<AnnounceResult> {
      const endpoint = input.callbackUrl ? null : await store.endpoint(input.keyId);
      const url = input.callbackUrl ?? endpoint?.url ?? null;
      if (!url) return { skipped: 'no_target' };
      if ((await store.signingSecrets(input.keyId)).length === 0) return { skipped: 'no_secret' };
      const type = eventType(input.subject, input.outcome);
      const data = input.subject === 'video' ? videoEventData(input.state, deps.signer) : input.data;
      const payload: WebhookPayload = { type, timestamp: new Date().toISOString(), data };
      const event = await store.recordEvent({
        id: eventId(input.subject, input.id, input.outcome),
        keyId: input.keyId,
        type,
        subjectId: input.id,
        url,
        payload,
      });
      if (event.state === 'pending') {
        await deps.startDelivery({
          eventId: event.id,
          retryInitialMs: settings.retryInitialMs,
          retryMaxMs: settings.retryMaxMs,
          deliverForMs: settings.deliverForMs,
          attemptTimeoutMs: settings.timeoutMs + ATTEMPT_WRITES_MS,
        });
      }
      if (Date.now() - lastPrune > PRUNE_EVERY_MS) {
        lastPrune = Date.now();
        // Housekeeping: never fails the announce.
        await store.prune(settings.keepDays).catch(() => undefined);
      }
      return { eventId: event.id };
    },

    /** One delivery attempt: signed now, POSTed through the guard, recorded; anything but a 2xx is thrown (retried). */
    async deliverWebhook(input: { eventId: string }): Promise<{ status: number }> {
      const attempt = Context.current().info.attempt;
      const event = await store.event(input.eventId);
      if (!event) throw ApplicationFailure.create({ message: `webhook event ${input.eventId} is not in the store`, type: UNDELIVERABLE, nonRetryable: true });
      if (event.state !== 'pending') return { status: 0 };
      const refuse = async (error: string): Promise<never> => {
        await store.recordAttempt({ eventId: event.id, attempt, httpStatus: null, error, durationMs: 0 });
        throw ApplicationFailure.create({ message: error, type: UNDELIVERABLE, nonRetryable: true });
      };
      const problem = webhookUrlProblem(event.url, settings);
      if (problem) return refuse(`the target URL ${problem}`);
      const secrets = await store.signingSecrets(event.keyId);
      if (secrets.length === 0) return refuse('the key has no webhook secret');
      const body = JSON.stringify(event.payload);
      const started = Date.now();
      const outcome = await postWebhook(event.url, { ...signedHeaders(secrets, event.id, Math.floor(started / 1000), body) }, body, settings);
      const durationMs = Date.now() - started;
      const status = 'status' in outcome ? outcome.status : null;
      const error = 'error' in outcome ? outcome.error : status !== null && (status < 200 || status > 299) ? `HTTP ${status}` : null;
      await store.recordAttempt({ eventId: event.id, attempt, httpStatus: status, error, durationMs });
      if (error !== null || status === null)
        throw ApplicationFailure.retryable(`delivery attempt ${attempt} failed: ${error ?? 'no status'}`, 'WebhookAttemptFailed');
      await store.finish(event.id, 'delivered');
      return { status };
    },

    async finishWebhookEvent(input: { eventId: string; state: 'delivered' | 'failed' }): Promise<void> {
      await store.finish(input.eventId, input.state);
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
