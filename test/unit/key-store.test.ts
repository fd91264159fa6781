/**
 * The key store on both databases: the embedded one (PGlite) and PostgreSQL on
 * 127.0.0.1:5432 (a throwaway database per run), through the same migrations.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openEmbeddedDb } from '../../src/store/embedded-db';
import { KeyStore } from '../../src/store/keys';
import { migrate, MIGRATION_IDS } from '../../src/store/migrations';
import { BOTH_STORES, type OpenedStore } from '../support/stores';

describe.each(BOTH_STORES)('%s', (_name, open) => {
  let opened: OpenedStore;
  let keys: KeyStore;
  beforeAll(async () => {
    opened = await open();
    expect(await migrate(opened.db)).toEqual(MIGRATION_IDS);
    expect(await migrate(opened.db)).toEqual([]); // idempotent
    keys = new KeyStore(opened.db);
    await keys.start();
  }, 60_000);
  afterAll(async () => opened?.cleanup());

  test('issued keys authenticate; only a hash is stored', async () => {
    const issued = await keys.issue('alice');
    expect(issued.key).toMatch(/^sk-[A-Za-z0-9_-]{43}$/);
    expect((await keys.authenticate(issued.key))?.id).toBe(issued.id);
    const rows = await opened.db.query<Record<string, unknown>>('select * from api_keys where id = $1', [issued.id]);
    expect(JSON.stringify(rows)).not.toContain(issued.key);
    expect(rows[0]?.key_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  test('unknown, malformed and revoked keys do not authenticate', async () => {
    const issued = await keys.issue('bob');
    expect(await keys.authenticate(issued.key.slice(0, -1) + (issued.key.endsWith('A') ? 'B' : 'A'))).toBeNull();
    expect(await keys.authenticate('not-a-key')).toBeNull();
    expect(await keys.authenticate(issued.key)).not.toBeNull(); // now cached
    expect(await keys.revoke(issued.id)).toBe(true);
    expect(await keys.authenticate(issued.key)).toBeNull();
    expect(await keys.revoke(issued.id)).toBe(false);
    expect((await keys.list()).map((k) => k.id)).not.toContain(issued.id);
  });

  test('a burst of requests with an uncached key reads the database once', async () => {
    const issued = await keys.issue('dora');
    let reads = 0;
    // A fresh store (empty cache) whose queries are counted.
    const counted = new Proxy(opened.db, {
      get(target, prop, receiver) {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (prop === 'query' && typeof value === 'function') {
          return (...args: unknown[]) => {
            reads += 1;
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const cold = new KeyStore(counted);
    const found = await Promise.all(Array.from({ length: 20 }, () => cold.authenticate(issued.key)));
    expect(found.map((k) => k?.id)).toEqual(Array.from({ length: 20 }, () => issued.id));
    expect(reads).toBe(1);
    // Revoked while a read runs: a request after the revocation neither shares that read nor
    // finds what it read in the cache.
    const another = new KeyStore(counted);
    const inFlight = another.authenticate(issued.key);
    expect(await another.revoke(issued.id)).toBe(true);
    expect(await another.authenticate(issued.key)).toBeNull();
    await inFlight;
  });

  /** The store's db with its queries counted. */
  function countedDb(): { db: typeof opened.db; queries: () => number } {
    let queries = 0;
    const db = new Proxy(opened.db, {
      get(target, prop, receiver) {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (prop === 'query' && typeof value === 'function') {
          return (...args: unknown[]) => {
            queries += 1;
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    return { db, queries: () => queries };
  }

  test('a wrong key presented again and again costs one query (a bounded miss cache)', async () => {
    const counted = countedDb();
    const store = new KeyStore(counted.db);
    const wrong = `sk-${'x'.repeat(43)}`;
    for (let i = 0; i < 50; i++) expect(await store.authenticate(wrong)).toBeNull();
    await Promise.all(Array.from({ length: 20 }, async () => expect(await store.authenticate(wrong)).toBeNull()));
    expect(counted.queries()).toBe(1);
    // Malformed and foreign-looking secrets never reach the store at all.
    expect(await store.authenticate('not-a-key')).toBeNull();
    expect(await store.authenticate(`sk-${'y'.repeat(300)}`)).toBeNull();
    expect(counted.queries()).toBe(1);
  });

  test('a revoked key keeps failing, from the miss cache too', async () => {
    const counted = countedDb();
    const store = new KeyStore(counted.db);
    await store.start();
    const issued = await store.issue('erin');
    expect(await store.authenticate(issued.key)).not.toBeNull();
    expect(store.recentlyValid(issued.key)).toBe(true);
    expect(await store.revoke(issued.id)).toBe(true);
    expect(store.recentlyValid(issued.key)).toBe(false);
    // The revocation's NOTIFY comes back to this store too (and empties its misses): let it land.
    await new Promise((r) => setTimeout(r, 300));
    const before = counted.queries();
    for (let i = 0; i < 10; i++) expect(await store.authenticate(issued.key)).toBeNull();
    expect(counted.queries() - before).toBe(1);
  });

  test('any key issued, in this process or another, empties the miss cache (a miss never refuses a later key)', async () => {
    const counted = countedDb();
    const store = new KeyStore(counted.db);
    await store.start();
    const wrong = `sk-${'z'.repeat(43)}`;
    expect(await store.authenticate(wrong)).toBeNull();
    expect(await store.authenticate(wrong)).toBeNull();
    expect(counted.queries()).toBe(1);
    // Another replica issues a key: its NOTIFY reaches this store, which forgets its misses.
    const other = new KeyStore(opened.db);
    const issued = await other.issue('frank');
    await waitUntil(async () => {
      const before = counted.queries();
      await store.authenticate(wrong);
      return counted.queries() > before;
    });
    expect((await store.authenticate(issued.key))?.id).toBe(issued.id);
  });

  test('a revocation by another process sharing the database reaches this cache', async () => {
    const issued = await keys.issue('carol');
    expect(await keys.authenticate(issued.key)).not.toBeNull();
    // Another store instance on the same db stands in for another API replica.
    const other = new KeyStore(opened.db);
    await other.revoke(issued.id);
    await new Promise((r) => setTimeout(r, 300));
    expect(await keys.authenticate(issued.key)).toBeNull();
  });
});

async function waitUntil(check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('the embedded store refuses a second owner process', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-lock-'));
  fs.writeFileSync(path.join(dir, 'db.lock'), String(process.ppid));
  await expect(openEmbeddedDb(path.join(dir, 'db'))).rejects.toThrow(/in use by process/);
  fs.rmSync(dir, { recursive: true, force: true });
});
