/**
 * The seam between POST /v1/responses and background responses (`background: true`), which run
 * as durable workflows implemented elsewhere. The route validates the request, checks the key,
 * picks the channels and issues the gateway's response id; everything after that (the hold, the
 * upstream create, the polling, the record in the ResponseStore, billing) is the port's.
 * Without a port the route answers 400 "background responses are not enabled".
 */
import type { TextChannel } from '../config/channels';
import type { StoredResponse } from '../store/responses';

export interface BackgroundCreate {
  /** The gateway's id for the new response (newResponseId()); the client sees only this one. */
  id: string;
  /** The caller's key: the response's owner. */
  keyId: string;
  /** The request id of the create (x-request-id), for logs and the hold. */
  requestId: string;
  /** The model as the client named it (a channel maps it: channel.models[model]). */
  model: string;
  /**
   * The `openai-responses` channels serving the model, best first. Only the channel holding
   * previous_response_id when the request continues one.
   */
  channels: readonly TextChannel[];
  /**
   * The client's body as validated, with `background: true`, without `stream`. Its
   * previous_response_id is still the gateway's id: send `upstreamPreviousId` instead.
   */
  body: Record<string, unknown>;
  /** The upstream's id of previous_response_id, or null. */
  upstreamPreviousId: string | null;
  /** Input the provider adds from the response continued (its input and output), for the hold. */
  contextTokens: number;
  /** The request's callback_url, checked: the completion webhook goes there instead of the key's endpoint. */
  callbackUrl?: string;
}

/** Every method answers the Response object as the client must see it: the gateway's id, the client's model name. */
export interface BackgroundResponses {
  /**
   * Starts the response and records it (ResponseStore.insert, background true) before it
   * resolves, so an immediate GET finds it. Resolves with its first state (queued / in_progress).
   */
  create(request: BackgroundCreate): Promise<Record<string, unknown>>;
  /** True for the record of a create whose run could not be started (the client was answered an error, not this response). */
  neverStarted(stored: StoredResponse): boolean;
  /** Its current state (GET /v1/responses/{id}); `stored` is the key's own record. */
  retrieve(stored: StoredResponse): Promise<Record<string, unknown>>;
  /** Cancels it (POST /v1/responses/{id}/cancel); a finished one is answered as it is. */
  cancel(stored: StoredResponse): Promise<Record<string, unknown>>;
  /**
   * Called after the route marked it deleted (DELETE /v1/responses/{id}): stops its run, which
   * deletes the provider's copy as it closes. Resolves with the record whose provider copy the
   * caller deletes instead (its run had ended), or null when the run does it.
   */
  deleted(stored: StoredResponse): Promise<StoredResponse | null>;
}
