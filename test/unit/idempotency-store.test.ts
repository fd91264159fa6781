/**
 * The Idempotency-Key store on both stores: who may create under a key, when a repeat answers
 * the task made before, and when a key is taken over (a create that died, a key past its 24
 * hours). The e2e test (test/e2e/idempotency.test.ts) drives it through the routes.
 */
import { canonicalJson } from '../../src/api/idempotency';
import { IdempotencyStore } from '../../src/store/idempotency';
import { KeyStore } from '../../src/store/keys';
import { migrate } from '../../src/store/migrations';
import { BOTH_STORES, type OpenedStore } from '../support/stores';

describe.each(BOTH_STORES)('%s', (_name, open) => {
  let opened: OpenedStore;
  let store: IdempotencyStore;
  let keyId: string;
  beforeAll(async () => {
    opened = await open();
    await migrate(opened.db);
    keyId = (await new KeyStore(opened.db).issue('idem')).id;
    store = new IdempotencyStore(opened.db);
  }, 60_000);
  afterAll(async () => opened?.cleanup());

  const ids = (n: number) => ({ taskId: `t${n}` });

  test('first use creates; a repeat waits while it runs, then answers its ids; another request is a mismatch', async () => {
    expect(await store.claim(keyId, 'a', 'f1', ids(1), 30)).toEqual({ kind: 'create', ids: ids(1), takeover: false });
    expect(await store.claim(keyId, 'a', 'f1', ids(2), 30)).toEqual({ kind: 'busy' });
    expect(await store.claim(keyId, 'a', 'f2', ids(3), 30)).toEqual({ kind: 'mismatch' });
    await store.done(keyId, 'a', ids(1));
    expect(await store.claim(keyId, 'a', 'f1', ids(4), 30)).toEqual({ kind: 'done', ids: ids(1) });
    expect(await store.claim(keyId, 'a', 'f2', ids(5), 30)).toEqual({ kind: 'mismatch' });
  });

  test('a create that failed after it may have made a task is taken over at once with its ids, by one repeat only', async () => {
    await store.claim(keyId, 'b', 'f', ids(1), 30);
    await store.release(keyId, 'b', ids(1));
    const [x, y] = await Promise.all([store.claim(keyId, 'b', 'f', ids(2), 30), store.claim(keyId, 'b', 'f', ids(3), 30)]);
    expect([x, y].filter((c) => c.kind === 'create')).toEqual([{ kind: 'create', ids: ids(1), takeover: true }]);
    expect([x, y].filter((c) => c.kind === 'busy')).toHaveLength(1);
  });

  test('a create that died is taken over once its lease runs out', async () => {
    await store.claim(keyId, 'c', 'f', ids(1), 30);
    await opened.db.query("update idempotency_keys set lease_until = now() - interval '1 second' where idempotency_key = 'c'");
    expect(await store.claim(keyId, 'c', 'f', ids(2), 30)).toEqual({ kind: 'create', ids: ids(1), takeover: true });
  });

  test('a refused create frees the key for any request; a key past 24 hours is new again', async () => {
    await store.claim(keyId, 'd', 'f', ids(1), 30);
    await store.forget(keyId, 'd');
    expect(await store.claim(keyId, 'd', 'other', ids(2), 30)).toEqual({ kind: 'create', ids: ids(2), takeover: false });
    await store.done(keyId, 'd', ids(2));
    await opened.db.query("update idempotency_keys set created_at = now() - interval '25 hours' where idempotency_key = 'd'");
    expect(await store.claim(keyId, 'd', 'third', ids(3), 30)).toEqual({ kind: 'create', ids: ids(3), takeover: false });
  });
});

test('canonical JSON: the same body with its fields in another order is the same request', () => {
  expect(canonicalJson({ b: 1, a: [{ d: 2, c: null }], u: undefined })).toBe(canonicalJson({ a: [{ c: null, d: 2 }], b: 1 }));
  expect(canonicalJson({ a: [1, 2] })).not.toBe(canonicalJson({ a: [2, 1] }));
});
