/**
 * The background response workflow's contract with the API that starts it and the activities it
 * runs (activities/response-activities.ts). Pure types: imported by workflow code.
 */
import type { ResponseStatus } from '../providers/openai-responses/schemas';
import type { TextUsage } from '../providers/usage';

/** The workflow's type name; its workflow id is the response's id (`resp_...`). */
export const BACKGROUND_RESPONSE_WORKFLOW = 'backgroundResponseWorkflow';

/** The watch's failure type when the response passed its deadline (not retried: the response fails as timed out). */
export const RESPONSE_TIMEOUT = 'ResponseTimeout';

/** A channel the response may be created on, best first; its poll interval sets the watch's heartbeat timeout. */
export interface ResponseChannelPlan {
  channel: string;
  pollMs: number;
  /** Create attempts here before failing over to the next channel. */
  submitAttempts: number;
}

export interface BackgroundResponseInput {
  /** The gateway's response id (the workflow id). */
  id: string;
  keyId: string;
  /** The create's request id: the usage record's. */
  requestId: string;
  /** The model as the client named it. */
  model: string;
  /** The channels serving it, best first (only the one holding previous_response_id when it continues one). */
  channels: ResponseChannelPlan[];
  /** The client's body as sent upstream (bar the model name and previous_response_id, which each channel maps). */
  body: Record<string, unknown>;
  /** The gateway's id of the response it continues, and the upstream's. */
  previousResponseId: string | null;
  upstreamPreviousId: string | null;
  /** The request's callback_url: its completion webhook goes there instead of the key's endpoint. */
  callbackUrl?: string;
  /** Unix ms: a response not finished by then is cancelled upstream and fails as timed out. */
  deadline: number;
  /** The backoff of create attempts. */
  retryInitialMs: number;
  retryMaxMs: number;
}

export interface SubmitResponseInput {
  id: string;
  channel: string;
  model: string;
  body: Record<string, unknown>;
  previousResponseId: string | null;
  upstreamPreviousId: string | null;
}

/** The upstream took the create (its id), or the response was closed (cancelled, deleted) before it went upstream. */
export type SubmitResponseResult = { upstreamId: string } | { closed: true };

export interface WatchResponseInput {
  id: string;
  channel: string;
  upstreamId: string;
  model: string;
  previousResponseId: string | null;
  pollMs: number;
  deadline: number;
}

/** How the upstream response ended, and what it produced (its usage, when it reported any). */
export interface WatchResponseResult {
  status: ResponseStatus;
  usage: TextUsage | null;
  error?: { code: string; message: string };
}

/** Why a response ended without the upstream's own end. */
export interface ResponseEnd {
  status: 'failed' | 'cancelled';
  error?: { code: string; message: string };
}

export interface CloseResponseInput {
  id: string;
  keyId: string;
  requestId: string;
  callbackUrl?: string;
  /** The end to record when the response is still open (the upstream's own end is already stored). */
  end: ResponseEnd | null;
  /** What the upstream reported it produced: billed; null = nothing known, the hold is released in full. */
  usage: TextUsage | null;
}
