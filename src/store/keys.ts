import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from './db';

export interface ApiKey {
  id: string;
  name: string;
  keyHint: string;
  createdAt: number;
  revokedAt: number | null;
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
}

const KEY_PREFIX = 'sk-';
const REVOKED_CHANNEL = 'gateway_key_revoked';
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

  constructor(private readonly db: Db) {}

  async start(): Promise<void> {
    await this.db.listen(REVOKED_CHANNEL, (id) => this.forget(id));
  }

  async issue(name: string): Promise<IssuedKey> {
    const secret = KEY_PREFIX + randomBytes(32).toString('base64url');
    const id = `key_${randomBytes(12).toString('hex')}`;
    const hint = `${KEY_PREFIX}...${secret.slice(-4)}`;
    const [row] = await this.db.query<KeyRow>(
      'insert into api_keys (id, name, key_hash, key_hint) values ($1, $2, $3, $4) returning *',
      [id, name, hashKey(secret).toString('hex'), hint],
    );
    if (!row) throw new Error('key insert returned no row');
    return { ...toKey(row), key: secret };
  }

  async list(): Promise<ApiKey[]> {
    const rows = await this.db.query<KeyRow>('select * from api_keys where revoked_at is null order by created_at, id');
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

    const [row] = await this.db.query<KeyRow>('select * from api_keys where key_hash = $1', [cacheKey]);
    if (!row || row.revoked_at !== null) return null;
    const stored = Buffer.from(row.key_hash, 'hex');
    if (stored.length !== hash.length || !timingSafeEqual(stored, hash)) return null;
    const key = toKey(row);
    if (this.cache.size >= CACHE_MAX) this.cache.delete(this.cache.keys().next().value ?? '');
    this.cache.set(cacheKey, { key, hash: stored, until: now + CACHE_TTL_MS });
    return key;
  }

  private forget(id: string): void {
    for (const [hash, entry] of this.cache) if (entry.key.id === id) this.cache.delete(hash);
  }
}
