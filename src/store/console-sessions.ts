import { createHash, randomBytes } from 'node:crypto';
import type { Db } from './db';

export type ConsoleRole = 'key' | 'admin';

/** A live console session, as the session routes and the cookie authentication see it. */
export interface ConsoleSession {
  role: ConsoleRole;
  /** The key a `key` session acts as; null for an operator's. */
  keyId: string | null;
  csrfToken: string;
  /** When the session ends unless used again (idle timeout), capped by its absolute lifetime; unix s. */
  expiresAt: number;
}

export interface ConsoleSessionLimits {
  /** Unused this long, a session ends (sliding). */
  idleMinutes: number;
  /** However used, a session ends this long after sign-in. */
  maxHours: number;
}

interface SessionRow {
  role: ConsoleRole;
  key_id: string | null;
  csrf_token: string;
  expires_at: number | string;
  /** True when last_seen_at is over a minute old: the read refreshes it. */
  stale: boolean;
  /** Neither idle too long nor past its lifetime, and its key (if any) not revoked. */
  live: boolean;
}

/** The sliding idle timeout is written at most this often per session, not on every request. */
const REFRESH_SECONDS = 60;
/** Expired rows are deleted this often (and the one presented, when found expired), so the table stays bounded. */
const SWEEP_MS = 10 * 60_000;

/** The earlier of idle expiry and absolute expiry, in unix seconds, from the parameters numbered idle (minutes) and max (hours). */
const expiresAtSql = (alias: string, idle: number, max: number): string =>
  `floor(extract(epoch from least(${alias}last_seen_at + ($${idle}::float8 * interval '1 minute'), ${alias}created_at + ($${max}::float8 * interval '1 hour'))))::bigint`;

const hashId = (id: string): string => createHash('sha256').update(id, 'utf8').digest('hex');

/**
 * Console sign-ins (issue 21). The session id is 32 random bytes handed out once in the
 * cookie; only its sha256 is stored, so a copy of the table signs nobody in. Expiry is judged
 * by the database's clock in SQL, so every API replica agrees on it.
 */
export class ConsoleSessions {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Db,
    private readonly limits: ConsoleSessionLimits,
  ) {}

  /** Deletes expired sessions now and every SWEEP_MS. */
  start(): void {
    const sweep = () => void this.sweep().catch(() => undefined);
    sweep();
    this.timer = setInterval(sweep, SWEEP_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  async sweep(): Promise<void> {
    await this.db.query(
      `delete from console_sessions
       where last_seen_at < now() - ($1::float8 * interval '1 minute') or created_at < now() - ($2::float8 * interval '1 hour')`,
      [this.limits.idleMinutes, this.limits.maxHours],
    );
  }

  /** A new session; its id (for the cookie) is returned once and never stored. */
  async create(role: ConsoleRole, keyId: string | null): Promise<{ id: string; session: ConsoleSession }> {
    const id = randomBytes(32).toString('base64url');
    const csrfToken = randomBytes(32).toString('base64url');
    const [row] = await this.db.query<{ expires_at: number | string }>(
      `insert into console_sessions (id_hash, role, key_id, csrf_token) values ($1, $2, $3, $4)
       returning ${expiresAtSql('', 5, 6)} as expires_at`,
      [hashId(id), role, keyId, csrfToken, this.limits.idleMinutes, this.limits.maxHours],
    );
    return { id, session: { role, keyId, csrfToken, expiresAt: Number(row?.expires_at ?? 0) } };
  }

  /**
   * The live session for a cookie's id, or null (unknown, idle too long, past its lifetime, or
   * its key revoked). Refreshes the idle timeout when it was last refreshed over a minute ago.
   */
  async find(id: string): Promise<ConsoleSession | null> {
    if (id === '' || id.length > 100) return null;
    const idHash = hashId(id);
    const [row] = await this.db.query<SessionRow>(
      `select s.role, s.key_id, s.csrf_token, ${expiresAtSql('s.', 2, 3)} as expires_at,
              s.last_seen_at < now() - ($4::int * interval '1 second') as stale,
              (s.last_seen_at >= now() - ($2::float8 * interval '1 minute') and s.created_at >= now() - ($3::float8 * interval '1 hour')
                and (s.key_id is null or k.revoked_at is null)) as live
       from console_sessions s left join api_keys k on k.id = s.key_id where s.id_hash = $1`,
      [idHash, this.limits.idleMinutes, this.limits.maxHours, REFRESH_SECONDS],
    );
    if (!row) return null;
    if (!row.live) {
      await this.db.query('delete from console_sessions where id_hash = $1', [idHash]);
      return null;
    }
    let expiresAt = Number(row.expires_at);
    if (row.stale) {
      const [refreshed] = await this.db.query<{ expires_at: number | string }>(
        `update console_sessions set last_seen_at = now() where id_hash = $1 returning ${expiresAtSql('', 2, 3)} as expires_at`,
        [idHash, this.limits.idleMinutes, this.limits.maxHours],
      );
      if (refreshed) expiresAt = Number(refreshed.expires_at);
    }
    return { role: row.role, keyId: row.key_id, csrfToken: row.csrf_token, expiresAt };
  }

  /** Signs out: true when a session was deleted. */
  async delete(id: string): Promise<boolean> {
    const rows = await this.db.query('delete from console_sessions where id_hash = $1 returning 1', [hashId(id)]);
    return rows.length > 0;
  }
}
