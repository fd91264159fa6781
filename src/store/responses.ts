/**
 * The gateway's record of each Responses API response (migration 14). The gateway issues its
 * own ids (`resp_` + 48 hex): the client never learns the upstream's, so its owner is checked on
 * every read (another key's id reads as absent), and a later request naming it as
 * previous_response_id is sent to the channel that holds it, under the upstream's id.
 */
import { randomBytes } from 'node:crypto';
import type { Db } from './db';
import type { ResponseStatus } from '../providers/openai-responses/schemas';

export interface StoredResponse {
  /** The gateway's id. */
  id: string;
  /** The key that created it: its owner. */
  keyId: string;
  model: string;
  /** The channel that holds it upstream. */
  channel: string;
  /** The upstream's id; null until the upstream accepted it. */
  upstreamId: string | null;
  background: boolean;
  status: ResponseStatus;
  /** Unix seconds. */
  createdAt: number;
  /** The Response object as last returned to the client (ids the gateway's), or null before there is one. */
  response: Record<string, unknown> | null;
}

/** A new record: everything but its creation time, which the store sets. */
export type NewStoredResponse = Omit<StoredResponse, 'createdAt'>;

export interface ResponseUpdate {
  channel?: string;
  upstreamId?: string;
  status?: ResponseStatus;
  response?: Record<string, unknown>;
}

interface ResponseRow {
  id: string;
  key_id: string;
  model: string;
  channel: string;
  upstream_id: string | null;
  background: boolean;
  status: ResponseStatus;
  created_at: Date | string;
  response: Record<string, unknown> | string | null;
}

const COLUMNS = 'id, key_id, model, channel, upstream_id, background, status, created_at, response';

/** OpenAI's shape: `resp_` and 48 hex digits (24 random bytes: unguessable). */
export function newResponseId(): string {
  return `resp_${randomBytes(24).toString('hex')}`;
}

function toStored(row: ResponseRow): StoredResponse {
  return {
    id: row.id,
    keyId: row.key_id,
    model: row.model,
    channel: row.channel,
    upstreamId: row.upstream_id,
    background: row.background,
    status: row.status,
    createdAt: Math.floor(new Date(row.created_at).getTime() / 1000),
    // jsonb comes back parsed from both stores; a string is tolerated all the same.
    response: typeof row.response === 'string' ? (JSON.parse(row.response) as Record<string, unknown>) : row.response,
  };
}

export class ResponseStore {
  constructor(private readonly db: Db) {}

  async insert(r: NewStoredResponse): Promise<void> {
    await this.db.query(
      `insert into responses (id, key_id, model, channel, upstream_id, background, status, response)
       values ($1, $2, $3, $4, $5, $6, $7, $8::jsonb)`,
      [r.id, r.keyId, r.model, r.channel, r.upstreamId, r.background, r.status, r.response === null ? null : JSON.stringify(r.response)],
    );
  }

  /** The key's response, unless deleted; null for another key's (its owner only ever sees it). */
  async get(id: string, keyId: string): Promise<StoredResponse | null> {
    const rows = await this.db.query<ResponseRow>(
      `select ${COLUMNS} from responses where id = $1 and key_id = $2 and not deleted`,
      [id, keyId],
      'response_get',
    );
    return rows[0] ? toStored(rows[0]) : null;
  }

  /** Changes what is given; a deleted response is left as it is. True when a row changed. */
  async update(id: string, change: ResponseUpdate): Promise<boolean> {
    const rows = await this.db.query<{ id: string }>(
      `update responses set
         channel = coalesce($2, channel),
         upstream_id = coalesce($3, upstream_id),
         status = coalesce($4, status),
         response = coalesce($5::jsonb, response),
         updated_at = now()
       where id = $1 and not deleted returning id`,
      [id, change.channel ?? null, change.upstreamId ?? null, change.status ?? null, change.response === undefined ? null : JSON.stringify(change.response)],
    );
    return rows.length > 0;
  }

  /** A response by id alone, deleted or not (a background response's own run reads it so). */
  async byId(id: string): Promise<(StoredResponse & { deleted: boolean }) | null> {
    const rows = await this.db.query<ResponseRow & { deleted: boolean }>(`select ${COLUMNS}, deleted from responses where id = $1`, [id]);
    return rows[0] ? { ...toStored(rows[0]), deleted: rows[0].deleted } : null;
  }

  /**
   * A background response's upstream took it: where it lives is always recorded (its run must
   * cancel it there), its state only while the response is still open (a cancel that came first
   * stays).
   */
  async accepted(id: string, channel: string, upstreamId: string, response: Record<string, unknown>): Promise<void> {
    await this.db.query(
      `update responses set channel = $2, upstream_id = $3,
         status = case when status in ('queued', 'in_progress') then $4 else status end,
         response = case when status in ('queued', 'in_progress') then $5::jsonb else response end,
         updated_at = now()
       where id = $1`,
      [id, channel, upstreamId, response.status, JSON.stringify(response)],
    );
  }

  /** A new state of an open background response; a finished or deleted one is left as it is. */
  async progressed(id: string, response: Record<string, unknown>): Promise<void> {
    await this.db.query(
      `update responses set status = $2, response = $3::jsonb, updated_at = now()
       where id = $1 and status in ('queued', 'in_progress') and not deleted`,
      [id, response.status, JSON.stringify(response)],
    );
  }

  /**
   * Ends an open response with `response` (its status terminal): the first end written wins (a
   * cancel racing the upstream's completion), and the response as it ended is returned, null
   * when there is no such response.
   */
  async finish(id: string, response: Record<string, unknown>): Promise<StoredResponse | null> {
    const rows = await this.db.query<ResponseRow>(
      `update responses set status = $2, response = $3::jsonb, updated_at = now()
       where id = $1 and status in ('queued', 'in_progress') returning ${COLUMNS}`,
      [id, response.status, JSON.stringify(response)],
    );
    return rows[0] ? toStored(rows[0]) : this.byId(id);
  }

  /** Marks the key's response deleted. True when this call did (of racing deletes exactly one does). */
  async markDeleted(id: string, keyId: string): Promise<boolean> {
    const rows = await this.db.query<{ id: string }>(
      'update responses set deleted = true, updated_at = now() where id = $1 and key_id = $2 and not deleted returning id',
      [id, keyId],
    );
    return rows.length > 0;
  }
}
