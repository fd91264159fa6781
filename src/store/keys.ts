import { createHash, hash as oneShotHash, randomBytes, timingSafeEqual } from 'node:crypto';
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
  /** Video tasks and background responses in flight at once, or null for no limit. */
  maxConcurrentTasks: number | null;
  /** Text requests in flight at once, or null for the gateway's default (TEXT_MAX_IN_FLIGHT_PER_KEY). */
  maxTextInFlight: number | null;
}

/** What an operator sets when issuing a key; absent = unlimited. */
export interface KeyLimits {
  /** Opening balance in credits; absent makes the key unlimited. */
  quota?: number;
  rateLimitRpm?: number | null;
  maxConcurrentTasks?: number | null;
  maxTextInFlight?: number | null;
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
  max_text_in_flight: number | null;
}

const KEY_PREFIX = 'sk-';
/** Issues, revocations and limit changes: every process drops what it cached about the key (and every miss). */
const REVOKED_CHANNEL = 'gateway_key_revoked';
/** The payload on REVOKED_CHANNEL that announces a new key (its id follows): only misses are forgotten. */
const ISSUED_PREFIX = 'issued:';
const KEY_COLUMNS = 'id, name, key_hash, key_hint, created_at, revoked_at, limited, rate_limit_rpm, max_concurrent_tasks, max_text_in_flight';
/** Bounded so a flood of random keys cannot grow memory; entries also expire. */
const CACHE_MAX = 10_000;
const CACHE_TTL_MS = 30_000;
/**
 * Secrets that matched no live key, by hash: a client retrying a wrong or revoked key costs no
 * query per request. Short-lived and bounded like the positive cache; it can only ever say
 * "no", and it is emptied whenever any key changes (issued, revoked, limits), in every process.
 */
const MISS_CACHE_MAX = 10_000;
const MISS_CACHE_TTL_MS = 30_000;

/**
 * Every request hashes its key: crypto.hash (Node 20.12 and later) digests without a Hash object,
 * for a third of createHash's CPU; older Nodes take the long way. Chosen once, at load.
 */
const hashKey: (secret: string) => Buffer =
  typeof oneShotHash === 'function' ? (secret) => oneShotHash('sha256', secret, 'buffer') : (secret) => createHash('sha256').update(secret, 'utf8').digest();

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
    maxTextInFlight: row.max_text_in_flight,
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
  /** Hash (hex) -> until: secrets known to match no live key. */
  private readonly misses = new Map<string, number>();
  /** Bumped whenever misses are forgotten: a lookup that began before may not record one. */
  private missGeneration = 0;
  /** Lookups under way; forget() invalidates them, so a read from before it does not fill the cache. */
  private readonly lookups = new SingleFlight<ApiKey | null>();

  constructor(private readonly db: Db) {}

  async start(): Promise<void> {
    await this.db.listen(REVOKED_CHANNEL, (payload) => (payload.startsWith(ISSUED_PREFIX) ? this.forgetMisses() : this.forget(payload)));
  }

  /** A new key; a quota is granted in the same transaction, so the key never exists without its opening ledger entry. */
  async issue(name: string, limits: KeyLimits = {}): Promise<IssuedKey> {
    const secret = KEY_PREFIX + randomBytes(32).toString('base64url');
    const id = `key_${randomBytes(12).toString('hex')}`;
    const hint = `${KEY_PREFIX}...${secret.slice(-4)}`;
    const quota = limits.quota;
    const row = await this.db.transaction(async (tx) => {
      const [inserted] = await tx.query<KeyRow>(
        `insert into api_keys (id, name, key_hash, key_hint, limited, balance, rate_limit_rpm, max_concurrent_tasks, max_text_in_flight)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9) returning ${KEY_COLUMNS}`,
        [
          id,
          name,
          hashKey(secret).toString('hex'),
          hint,
          quota !== undefined,
          quota ?? 0,
          limits.rateLimitRpm ?? null,
          limits.maxConcurrentTasks ?? null,
          limits.maxTextInFlight ?? null,
        ],
      );
      if (quota !== undefined) {
        await tx.query("insert into ledger_entries (key_id, kind, amount, ref, reason) values ($1, 'grant', $2, $3, 'opening quota')", [
          id,
          quota,
          `open:${id}`,
        ]);
      }
      return inserted;
    });
    if (!row) throw new Error('key insert returned no row');
    // A miss cached for this very secret (it cannot have been presented before it existed,
    // short of guessing 256 random bits) must still never refuse it: forget every miss.
    this.forgetMisses();
    await this.db.query('select pg_notify($1, $2)', [REVOKED_CHANNEL, ISSUED_PREFIX + id]);
    return { ...toKey(row), key: secret };
  }

  /** The key (live or revoked), or null. */
  async get(id: string): Promise<ApiKey | null> {
    const [row] = await this.db.query<KeyRow>(`select ${KEY_COLUMNS} from api_keys where id = $1`, [id]);
    return row ? toKey(row) : null;
  }

  /** Changes a live key's rate limits; every process re-reads the key on its next request. */
  async setLimits(id: string, limits: Pick<KeyLimits, 'rateLimitRpm' | 'maxConcurrentTasks' | 'maxTextInFlight'>): Promise<ApiKey | null> {
    const [row] = await this.db.query<KeyRow>(
      `update api_keys set
         rate_limit_rpm = case when $2::boolean then $3::integer else rate_limit_rpm end,
         max_concurrent_tasks = case when $4::boolean then $5::integer else max_concurrent_tasks end,
         max_text_in_flight = case when $6::boolean then $7::integer else max_text_in_flight end
       where id = $1 and revoked_at is null returning ${KEY_COLUMNS}`,
      [
        id,
        limits.rateLimitRpm !== undefined,
        limits.rateLimitRpm ?? null,
        limits.maxConcurrentTasks !== undefined,
        limits.maxConcurrentTasks ?? null,
        limits.maxTextInFlight !== undefined,
        limits.maxTextInFlight ?? null,
      ],
    );
    this.forget(id);
    if (row) await this.db.query('select pg_notify($1, $2)', [REVOKED_CHANNEL, id]);
    return row ? toKey(row) : null;
  }

  /** The live keys (with `includeRevoked`, the revoked ones too), oldest first. */
  async list(includeRevoked = false): Promise<ApiKey[]> {
    const rows = await this.db.query<KeyRow>(`select ${KEY_COLUMNS} from api_keys where ($1::boolean or revoked_at is null) order by created_at, id`, [
      includeRevoked,
    ]);
    return rows.map(toKey);
  }

  async count(): Promise<number> {
    const [row] = await this.db.query<{ n: number }>('select count(*)::int as n from api_keys');
    return row?.n ?? 0;
  }

  /** True when a live key was revoked by this call. */
  async revoke(id: string): Promise<boolean> {
    const rows = await this.db.query<{ id: string }>('update api_keys set revoked_at = now() where id = $1 and revoked_at is null returning id', [id]);
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
    const missUntil = this.misses.get(cacheKey);
    if (missUntil !== undefined) {
      if (missUntil > now) return null;
      this.misses.delete(cacheKey);
    }

    // Under a burst the cache entry expires for every request at once: one lookup serves them all.
    return this.lookups.run(cacheKey, (current) => this.lookup(cacheKey, hash, current));
  }

  private async lookup(cacheKey: string, hash: Buffer, current: () => boolean): Promise<ApiKey | null> {
    const now = Date.now();
    const missGeneration = this.missGeneration;
    const [row] = await this.db.query<KeyRow>(`select ${KEY_COLUMNS} from api_keys where key_hash = $1`, [cacheKey]);
    const stored = row ? Buffer.from(row.key_hash, 'hex') : null;
    if (!row || row.revoked_at !== null || !stored || stored.length !== hash.length || !timingSafeEqual(stored, hash)) {
      // A miss read before a key changed may be out of date: only a current one is remembered.
      if (current() && missGeneration === this.missGeneration) this.rememberMiss(cacheKey, now);
      return null;
    }
    const key = toKey(row);
    // A key forgotten (revoked, limits changed) while this read ran may have been read as it was.
    if (!current()) return key;
    if (this.cache.size >= CACHE_MAX) this.cache.delete(this.cache.keys().next().value ?? '');
    this.cache.set(cacheKey, { key, hash: stored, until: now + CACHE_TTL_MS });
    return key;
  }

  /**
   * True when this process found the secret valid before (its cache entry, even one past its
   * TTL, has not been dropped by a revocation or limit change). No query: used to let a known
   * client through while its address is refused lookups for too many failures.
   */
  recentlyValid(secret: string): boolean {
    if (this.cache.size === 0 || !secret.startsWith(KEY_PREFIX) || secret.length > 200) return false;
    const hash = hashKey(secret);
    const cached = this.cache.get(hash.toString('hex'));
    return cached !== undefined && timingSafeEqual(cached.hash, hash);
  }

  private rememberMiss(cacheKey: string, now: number): void {
    this.misses.delete(cacheKey);
    if (this.misses.size >= MISS_CACHE_MAX) {
      // Insertion order is expiry order (one TTL for all): drop the expired, or else the oldest.
      for (const [hash, until] of this.misses) {
        if (until > now && this.misses.size < MISS_CACHE_MAX) break;
        this.misses.delete(hash);
      }
    }
    this.misses.set(cacheKey, now + MISS_CACHE_TTL_MS);
  }

  /** Misses read before now may be out of date; lookups under way must not record theirs. */
  private forgetMisses(): void {
    this.misses.clear();
    this.missGeneration += 1;
  }

  private forget(id: string): void {
    this.forgetMisses();
    for (const [hash, entry] of this.cache) if (entry.key.id === id) this.cache.delete(hash);
    // Reads under way may return the key as it was: later requests must not share them.
    this.lookups.invalidate();
  }
}
