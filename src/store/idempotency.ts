/**
 * Idempotency-Key on creates: the first request with a key (per API key) records its
 * fingerprint and the ids its create will use (the task id, a saved character's id) before it
 * does anything; a repeat with the same fingerprint within IDEMPOTENCY_WINDOW_HOURS answers the
 * same task, and a repeat with another fingerprint is refused. The task id is fixed up front,
 * so a create that died halfway is finished by its repeat with the same ids: the charge is
 * idempotent by task id and the start by workflow id, so two repeats can never make two tasks.
 */
import { z } from 'zod';
import type { Db } from './db';

export const IDEMPOTENCY_WINDOW_HOURS = 24;

/** The ids a create makes, fixed before it starts. */
export const createIds = z.object({ taskId: z.string(), characterId: z.string().optional(), username: z.string().optional() });
export type CreateIds = z.infer<typeof createIds>;

export type Claim =
  /** Nobody holds this key (first use, or the holder died or failed): create with `ids`. */
  | { kind: 'create'; ids: CreateIds; takeover: boolean }
  /** A create with this key finished: answer its task. */
  | { kind: 'done'; ids: CreateIds }
  /** Another request with this key is creating right now. */
  | { kind: 'busy' }
  /** The key was used for another request. */
  | { kind: 'mismatch' };

interface Row {
  fingerprint: string;
  ids: unknown;
  state: 'pending' | 'done';
  leased: boolean;
}

export class IdempotencyStore {
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly db: Db) {}

  /** Forgets keys past the window every hour, so the table holds one day of creates. */
  start(): void {
    const purge = () =>
      void this.db
        .query(`delete from idempotency_keys where created_at < now() - ($1::int * interval '1 hour')`, [IDEMPOTENCY_WINDOW_HOURS])
        .catch(() => undefined);
    purge();
    this.timer = setInterval(purge, 3600_000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /**
   * Claims the key for a create lasting at most `leaseSeconds`, or says who has it. A row past
   * the window is taken over as if new; a pending row whose lease ran out (its create died or
   * failed in a way that may have left a task) is taken over with its ids.
   */
  async claim(keyId: string, key: string, fingerprint: string, fresh: CreateIds, leaseSeconds: number): Promise<Claim> {
    const [inserted] = await this.db.query<{ ids: unknown }>(
      `insert into idempotency_keys (key_id, idempotency_key, fingerprint, ids, state, lease_until)
       values ($1, $2, $3, $4::jsonb, 'pending', now() + ($5::int * interval '1 second'))
       on conflict (key_id, idempotency_key) do update
         set fingerprint = excluded.fingerprint, ids = excluded.ids, state = 'pending', lease_until = excluded.lease_until, created_at = now()
         where idempotency_keys.created_at < now() - ($6::int * interval '1 hour')
       returning ids`,
      [keyId, key, fingerprint, JSON.stringify(fresh), leaseSeconds, IDEMPOTENCY_WINDOW_HOURS],
    );
    if (inserted) return { kind: 'create', ids: fresh, takeover: false };
    const [row] = await this.db.query<Row>(
      'select fingerprint, ids, state, lease_until > now() as leased from idempotency_keys where key_id = $1 and idempotency_key = $2',
      [keyId, key],
    );
    if (!row) return this.claim(keyId, key, fingerprint, fresh, leaseSeconds);
    if (row.fingerprint !== fingerprint) return { kind: 'mismatch' };
    const ids = createIds.parse(row.ids);
    if (row.state === 'done') return { kind: 'done', ids };
    if (row.leased) return { kind: 'busy' };
    // The lease ran out: take it over, unless another repeat just did.
    const taken = await this.db.query(
      `update idempotency_keys set lease_until = now() + ($3::int * interval '1 second')
       where key_id = $1 and idempotency_key = $2 and state = 'pending' and lease_until <= now() returning 1`,
      [keyId, key, leaseSeconds],
    );
    return taken.length > 0 ? { kind: 'create', ids, takeover: true } : { kind: 'busy' };
  }

  /** The create finished: repeats answer its task. */
  async done(keyId: string, key: string, ids: CreateIds): Promise<void> {
    await this.db.query(`update idempotency_keys set state = 'done', ids = $3::jsonb where key_id = $1 and idempotency_key = $2`, [
      keyId,
      key,
      JSON.stringify(ids),
    ]);
  }

  /** The create was refused before it made anything: the key is free again, for any request. */
  async forget(keyId: string, key: string): Promise<void> {
    await this.db.query(`delete from idempotency_keys where key_id = $1 and idempotency_key = $2 and state = 'pending'`, [keyId, key]);
  }

  /** The create failed and may have left a task: a repeat takes over at once, with the same ids. */
  async release(keyId: string, key: string, ids: CreateIds): Promise<void> {
    await this.db.query(`update idempotency_keys set lease_until = now(), ids = $3::jsonb where key_id = $1 and idempotency_key = $2 and state = 'pending'`, [
      keyId,
      key,
      JSON.stringify(ids),
    ]);
  }
}
