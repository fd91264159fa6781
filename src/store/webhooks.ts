/**
 * Completion webhooks in the store (migration 15): a key's endpoint and signing secrets, the
 * events made when tasks end, and every delivery attempt. Written by the worker (events,
 * attempts) and by the admin API (endpoints, rotation); read by both.
 */
import type { Db } from './db';
import { newWebhookSecret, secretHint } from '../webhooks/signing';
import type { WebhookPayload } from '../webhooks/event';
import type { WebhookAttemptRecord, WebhookEndpointView, WebhookEventRecord, WebhookEventState } from '../webhooks/records';

export type { WebhookAttemptRecord, WebhookEndpointView, WebhookEventRecord, WebhookEventState };

/** How long a rotated-out secret still signs deliveries, so receivers can switch over. */
export const PREVIOUS_SECRET_VALID_MS = 24 * 60 * 60 * 1000;

interface EndpointRow {
  key_id: string;
  url: string | null;
  secret: string;
  previous_secret: string | null;
  previous_expires_at: Date | string | null;
  updated_at: Date | string;
}

interface EventRow {
  id: string;
  key_id: string;
  type: string;
  subject_id: string;
  url: string;
  payload: WebhookPayload | string;
  state: WebhookEventState;
  created_at: Date | string;
  finished_at: Date | string | null;
}

interface AttemptRow {
  event_id: string;
  attempt: number;
  at: Date | string;
  http_status: number | null;
  error: string | null;
  duration_ms: number;
}

const ms = (value: Date | string): number => new Date(value).getTime();
const seconds = (value: Date | string): number => Math.floor(ms(value) / 1000);

function endpointView(row: EndpointRow, now: number): WebhookEndpointView {
  const previousLive = row.previous_secret !== null && row.previous_expires_at !== null && ms(row.previous_expires_at) > now;
  return {
    keyId: row.key_id,
    url: row.url,
    secretHint: secretHint(row.secret),
    previousSecretExpiresAt: previousLive && row.previous_expires_at ? seconds(row.previous_expires_at) : null,
    updatedAt: seconds(row.updated_at),
  };
}

function eventRecord(row: EventRow): WebhookEventRecord {
  return {
    id: row.id,
    keyId: row.key_id,
    type: row.type,
    subjectId: row.subject_id,
    url: row.url,
    payload: typeof row.payload === 'string' ? (JSON.parse(row.payload) as WebhookPayload) : row.payload,
    state: row.state,
    createdAt: seconds(row.created_at),
    finishedAt: row.finished_at === null ? null : seconds(row.finished_at),
  };
}

const ENDPOINT_COLUMNS = 'key_id, url, secret, previous_secret, previous_expires_at, updated_at';
const EVENT_COLUMNS = 'id, key_id, type, subject_id, url, payload, state, created_at, finished_at';

export class WebhookStore {
  constructor(private readonly db: Db) {}

  async endpoint(keyId: string, now = Date.now()): Promise<WebhookEndpointView | null> {
    const [row] = await this.db.query<EndpointRow>(`select ${ENDPOINT_COLUMNS} from webhook_endpoints where key_id = $1`, [keyId]);
    return row ? endpointView(row, now) : null;
  }

  /**
   * Sets (or clears, with null) the key's default target. The first call makes the key's
   * secret and returns it: the only time it is shown, besides a rotation.
   */
  async setEndpoint(keyId: string, url: string | null, now = Date.now()): Promise<{ endpoint: WebhookEndpointView; secret: string | null }> {
    const fresh = newWebhookSecret();
    const [row] = await this.db.query<EndpointRow & { created: boolean }>(
      `insert into webhook_endpoints (key_id, url, secret) values ($1, $2, $3)
       on conflict (key_id) do update set url = excluded.url, updated_at = now()
       returning ${ENDPOINT_COLUMNS}, (xmax = 0) as created`,
      [keyId, url, fresh],
    );
    if (!row) throw new Error('webhook endpoint upsert returned no row');
    return { endpoint: endpointView(row, now), secret: row.created ? row.secret : null };
  }

  /** A new current secret; the old one goes on signing for PREVIOUS_SECRET_VALID_MS. Returns the new secret (shown once). */
  async rotate(keyId: string, now = Date.now()): Promise<{ endpoint: WebhookEndpointView; secret: string }> {
    const fresh = newWebhookSecret();
    const [row] = await this.db.query<EndpointRow>(
      `insert into webhook_endpoints (key_id, url, secret) values ($1, null, $2)
       on conflict (key_id) do update set previous_secret = webhook_endpoints.secret,
         previous_expires_at = now() + ($3::bigint * interval '1 millisecond'), secret = excluded.secret, updated_at = now()
       returning ${ENDPOINT_COLUMNS}`,
      [keyId, fresh, PREVIOUS_SECRET_VALID_MS],
    );
    if (!row) throw new Error('webhook secret rotation returned no row');
    return { endpoint: endpointView(row, now), secret: fresh };
  }

  /** The secrets a delivery is signed with now: the current one first, then a previous one still live. Empty when the key has none. */
  async signingSecrets(keyId: string): Promise<string[]> {
    const [row] = await this.db.query<{ secret: string; previous: string | null }>(
      `select secret, case when previous_expires_at > now() then previous_secret end as previous from webhook_endpoints where key_id = $1`,
      [keyId],
    );
    if (!row) return [];
    return row.previous ? [row.secret, row.previous] : [row.secret];
  }

  /** Records the event once; a second call with the same id finds the first (and returns it unchanged). */
  async recordEvent(event: { id: string; keyId: string; type: string; subjectId: string; url: string; payload: WebhookPayload }): Promise<WebhookEventRecord> {
    await this.db.query(
      `insert into webhook_events (id, key_id, type, subject_id, url, payload, state) values ($1, $2, $3, $4, $5, $6, 'pending') on conflict (id) do nothing`,
      [event.id, event.keyId, event.type, event.subjectId, event.url, JSON.stringify(event.payload)],
    );
    const found = await this.event(event.id);
    if (!found) throw new Error(`webhook event ${event.id} was not recorded`);
    return found;
  }

  async event(id: string): Promise<WebhookEventRecord | null> {
    const [row] = await this.db.query<EventRow>(`select ${EVENT_COLUMNS} from webhook_events where id = $1`, [id]);
    return row ? eventRecord(row) : null;
  }

  async recordAttempt(attempt: Omit<WebhookAttemptRecord, 'at'>): Promise<void> {
    await this.db.query('insert into webhook_attempts (event_id, attempt, http_status, error, duration_ms) values ($1, $2, $3, $4, $5)', [
      attempt.eventId,
      attempt.attempt,
      attempt.httpStatus,
      attempt.error === null ? null : attempt.error.slice(0, 500),
      attempt.durationMs,
    ]);
  }

  /** Marks a pending event delivered or given up; an event already finished stays as it is. */
  async finish(id: string, state: 'delivered' | 'failed'): Promise<void> {
    await this.db.query("update webhook_events set state = $2, finished_at = now() where id = $1 and state = 'pending'", [id, state]);
  }

  /**
   * Removes finished events older than `keepDays` with their attempts (pending ones stay while
   * their delivery runs); the number of events removed.
   */
  async prune(keepDays: number): Promise<number> {
    return this.db.transaction(async (tx) => {
      const old = "state <> 'pending' and created_at < now() - ($1::int * interval '1 day')";
      await tx.query(`delete from webhook_attempts where event_id in (select id from webhook_events where ${old})`, [keepDays]);
      const removed = await tx.query<{ id: string }>(`delete from webhook_events where ${old} returning id`, [keepDays]);
      return removed.length;
    });
  }

  /** A key's events, newest first, each with its attempts (oldest first). */
  async deliveries(keyId: string, opts: { limit: number; eventId?: string }): Promise<(WebhookEventRecord & { attempts: WebhookAttemptRecord[] })[]> {
    const rows = await this.db.query<EventRow>(
      `select ${EVENT_COLUMNS} from webhook_events where key_id = $1 and ($2::text is null or id = $2) order by created_at desc, id desc limit $3`,
      [keyId, opts.eventId ?? null, opts.limit],
    );
    if (rows.length === 0) return [];
    const attempts = await this.db.query<AttemptRow>(
      'select event_id, attempt, at, http_status, error, duration_ms from webhook_attempts where event_id = any($1::text[]) order by id',
      [rows.map((r) => r.id)],
    );
    const byEvent = new Map<string, WebhookAttemptRecord[]>();
    for (const a of attempts) {
      const list = byEvent.get(a.event_id) ?? [];
      list.push({ eventId: a.event_id, attempt: a.attempt, at: ms(a.at), httpStatus: a.http_status, error: a.error, durationMs: a.duration_ms });
      byEvent.set(a.event_id, list);
    }
    return rows.map((r) => ({ ...eventRecord(r), attempts: byEvent.get(r.id) ?? [] }));
  }
}
