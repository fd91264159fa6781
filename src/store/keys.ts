import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from './db';
import { SingleFlight } from './single-flight';

export interface ApiKey {
  id: string;
  name: string;
  keyHint: string;
  createdAt: number;
  revokedAt: number | null;
  /** True when the key draws on a quota (balance enforced); false = unlimited. */
  limited: boolean;
  /** Requests per minute, or null for no limit. */
  rateLimitRpm: number | null;
  /** Video tasks in flight at once, or null for no limit. */
  maxConcurrentTasks: number | null;
}

/** What an operator sets when issuing a key; absent = unlimited. */
export interface KeyLimits {
  /** Opening balance in credits; absent makes the key unlimited. */
  quota?: number;
  rateLimitRpm?: number | null;
  maxConcurrentTasks?: number | null;
}

export interface IssuedKey extends ApiKey {
  /** The secret; shown once, never stored. */
  key: string;
}

interface KeyRow {
  id: string;
  name: string;
  key_hash: string;
  key_hint: string;
  created_at: Date | string;
  revoked_at: Date | string | null;
  limited: boolean;
  rate_limit_rpm: number | null;
  max_concurrent_tasks: number | null;
}

const KEY_PREFIX = 'sk-';
/** Revocations and limit changes: every process drops its cached copy of the key. */
const REVOKED_CHANNEL = 'gateway_key_revoked';
const KEY_COLUMNS = 'id, name, key_hash, key_hint, created_at, revoked_at, limited, rate_limit_rpm, max_concurrent_tasks';
/** Bounded so a flood of random keys cannot grow memory; entries also expire. */
const CACHE_MAX = 10_000;
const CACHE_TTL_MS = 30_000;

function hashKey(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

function unixSeconds(value: Date | string): number {
  return Math.floor(new Date(value).getTime() / 1000);
}

function toKey(row: KeyRow): ApiKey {
  return {
    id: row.id,
    name: row.name,
    keyHint: row.key_hint,
    createdAt: unixSeconds(row.created_at),
    revokedAt: row.revoked_at === null ? null : unixSeconds(row.revoked_at),
    limited: row.limited,
    rateLimitRpm: row.rate_limit_rpm,
    maxConcurrentTasks: row.max_concurrent_tasks,
  };
}

/**
 * Keys are 32 random bytes, so a single SHA-256 is a sufficient hash (no password
 * stretching needed); the stored hash is compared in constant time after the lookup.
 * Authenticated keys are cached in-process; a revocation clears the entry here and, through
 * NOTIFY, in every other process sharing the database, so a revoked key fails at once.
 */
export class KeyStore {
  private readonly cache = new Map<string, { key: ApiKey; hash: Buffer; until: number }>();
  /** Lookups under way; forget() invalidates them, so a read from before it does not fill the cache. */
  private readonly lookups = new SingleFlight<ApiKey | null>();

  constructor(private readonly db: Db) {}

  async start(): Promise<void> {
    await this.db.listen(REVOKED_CHANNEL, (id) => this.forget(id));
  }

  /** A new key; a quota is granted in the same transaction, so the key never exists without its opening ledger entry. */
  async issue(name: string, limits: KeyLimits = {}): Promise<IssuedKey> {
    const secret = KEY_PREFIX + randomBytes(32).toString('base64url');
    const id = `key_${randomBytes(12).toString('hex')}`;
    const hint = `${KEY_PREFIX}...${secret.slice(-4)}`;
    const quota = limits.quota;
    const row = await this.db.transaction(async (tx) => {
      const [inserted] = await tx.query<KeyRow>(
        `insert into api_keys (id, name, key_hash, key_hint, limited, balance, rate_limit_rpm, max_concurrent_tasks)
         values ($1, $2, $3, $4, $5, $6, $7, $8) returning ${KEY_COLUMNS}`,
        [id, name, hashKey(secret).toString('hex'), hint, quota !== undefined, quota ?? 0, limits.rateLimitRpm ?? null, limits.maxConcurrentTasks ?? null],
      );
      if (quota !== undefined) {
        await tx.query(
          "insert into ledger_entries (key_id, kind, amount, ref, reason) values ($1, 'grant', $2, $3, 'opening quota')",
          [id, quota, `open:${id}`],
        );
      }
      return inserted;
    });
    if (!row) throw new Error('key insert returned no row');
    return { ...toKey(row), key: secret };
  }

  /** The key (live or revoked), or null. */
  async get(id: string): Promise<ApiKey | null> {
    const [row] = await this.db.query<KeyRow>(`select ${KEY_COLUMNS} from api_keys where id = $1`, [id]);
    return row ? toKey(row) : null;
  }

  /** Changes a live key's rate limits; every process re-reads the key on its next request. */
  async setLimits(id: string, limits: Pick<KeyLimits, 'rateLimitRpm' | 'maxConcurrentTasks'>): Promise<ApiKey | null> {
    const [row] = await this.db.query<KeyRow>(
      `update api_keys set
         rate_limit_rpm = case when $2::boolean then $3::integer else rate_limit_rpm end,
         max_concurrent_tasks = case when $4::boolean then $5::integer else max_concurrent_tasks end
       where id = $1 and revoked_at is null returning ${KEY_COLUMNS}`,
      [id, limits.rateLimitRpm !== undefined, limits.rateLimitRpm ?? null, limits.maxConcurrentTasks !== undefined, limits.maxConcurrentTasks ?? null],
    );
    this.forget(id);
    if (row) await this.db.query('select pg_notify($1, $2)', [REVOKED_CHANNEL, id]);
    return row ? toKey(row) : null;
  }

  async list(): Promise<ApiKey[]> {
    const rows = await this.db.query<KeyRow>(`select ${KEY_COLUMNS} from api_keys where revoked_at is null order by created_at, id`);
    return rows.map(toKey);
  }

  async count(): Promise<number> {
    const [row] = await this.db.query<{ n: number }>('select count(*)::int as n from api_keys');
    return row?.n ?? 0;
  }

  /** True when a live key was revoked by this call. */
  async revoke(id: string): Promise<boolean> {
    const rows = await this.db.query<{ id: string }>(
      'update api_keys set revoked_at = now() where id = $1 and revoked_at is null returning id',
      [id],
    );
    this.forget(id);
    if (rows.length > 0) await this.db.query('select pg_notify($1, $2)', [REVOKED_CHANNEL, id]);
    return rows.length > 0;
  }

  /** The live key for a presented secret, or null. */
  async authenticate(secret: string): Promise<ApiKey | null> {
    if (!secret.startsWith(KEY_PREFIX) || secret.length > 200) return null;
    const hash = hashKey(secret);
    const cacheKey = hash.toString('hex');
    const now = Date.now();
    const cached = this.cache.get(cacheKey);
    if (cached && cached.until > now && timingSafeEqual(cached.hash, hash)) return cached.key;

    // Under a burst the cache entry expires for every request at once: one lookup serves them all.
    return this.lookups.run(cacheKey, (current) => this.lookup(cacheKey, hash, current));
  }

  private async lookup(cacheKey: string, hash: Buffer, current: () => boolean): Promise<ApiKey | null> {
    const now = Date.now();
    const [row] = await this.db.query<KeyRow>(`select ${KEY_COLUMNS} from api_keys where key_hash = $1`, [cacheKey]);
    if (!row || row.revoked_at !== null) return null;
    const stored = Buffer.from(row.key_hash, 'hex');
    if (stored.length !== hash.length || !timingSafeEqual(stored, hash)) return null;
    const key = toKey(row);
    // A key forgotten (revoked, limits changed) while this read ran may have been read as it was.
    if (!current()) return key;
    if (this.cache.size >= CACHE_MAX) this.cache.delete(this.cache.keys().next().value ?? '');
    this.cache.set(cacheKey, { key, hash: stored, until: now + CACHE_TTL_MS });
    return key;
  }

  private forget(id: string): void {
    for (const [hash, entry] of this.cache) if (entry.key.id === id) this.cache.delete(hash);
    // Reads under way may return the key as it was: later requests must not share them.
    this.lookups.invalidate();
  }
}
