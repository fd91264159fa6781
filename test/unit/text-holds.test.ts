/**
 * Text holds on both stores (PGlite and PostgreSQL on 127.0.0.1:5432): however many text
 * requests of one key run at once, what they hold never exceeds what the key has; the per-key
 * cap on requests in flight holds under races; a video charge cannot spend what text holds; a
 * settlement releases its hold once; and the holds of a process that died are settled in full
 * by another. The ledger audit (held = its holds, text in flight = their count) is clean after.
 */
import pino from 'pino';
import { DEFAULT_PRICES } from '../../src/billing/prices';
import { BillingStore, InsufficientBalance } from '../../src/billing/ledger';
import { KeyStore } from '../../src/store/keys';
import { TextHolds, TooManyTextRequests, type TextHoldRequest } from '../../src/billing/text-holds';
import { UsageRecorder } from '../../src/billing/usage';
import { BOTH_STORES, auditAndClose, openLedgerStore, type OpenedStore } from '../support/stores';

const silent = pino({ level: 'silent' });

describe.each(BOTH_STORES)('%s', (_name, open) => {
  let opened: OpenedStore;
  let keys: KeyStore;
  let billing: BillingStore;
  beforeAll(async () => {
    ({ opened, keys, billing } = await openLedgerStore(open));
  }, 60_000);
  afterAll(async () => expect(await auditAndClose(opened)).toEqual([]));

  const request = (keyId: string, amount: number): TextHoldRequest => ({
    keyId,
    requestId: 'req',
    model: 'cm-haiku-4.5',
    endpoint: 'messages',
    streamed: true,
    amount,
  });

  test.each([1, 2])('100 concurrent holds of 300 credits on a key with 2,000, through %i process(es): exactly 6 are held', async (processes) => {
    const key = await keys.issue('race', { quota: 2000 });
    const holders = Array.from({ length: processes }, () => new TextHolds(opened.db, 1000, silent));
    const results = await Promise.allSettled(Array.from({ length: 100 }, (_, i) => holders[i % processes]!.hold(request(key.id, 300))));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(6);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(InsufficientBalance);
    expect(await billing.balance(key.id)).toEqual({ limited: true, balance: 2000, held: 1800 });

    const usage = new UsageRecorder(opened.db, silent, DEFAULT_PRICES);
    for (const r of results) if (r.status === 'fulfilled') await usage.settle({ holdId: r.value, keyId: key.id, usage: null });
    expect(await billing.balance(key.id)).toEqual({ limited: true, balance: 2000, held: 0 });
  });

  test('text requests in flight are capped per key, by its own cap or the default; a settled request frees its place', async () => {
    const capped = await keys.issue('capped', { maxTextInFlight: 3 });
    const defaulted = await keys.issue('default');
    const holds = new TextHolds(opened.db, 5, silent);
    await holds.start();
    holds.stop();
    const race = (keyId: string) => Promise.allSettled(Array.from({ length: 10 }, () => holds.hold(request(keyId, 1))));
    const [a, b] = await Promise.all([race(capped.id), race(defaulted.id)]);
    expect(a.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    expect(b.filter((r) => r.status === 'fulfilled')).toHaveLength(5);
    for (const r of [...a, ...b]) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(TooManyTextRequests);

    const usage = new UsageRecorder(opened.db, silent, DEFAULT_PRICES);
    const first = a.find((r): r is PromiseFulfilledResult<string> => r.status === 'fulfilled')!;
    await usage.settle({ holdId: first.value, keyId: capped.id, usage: null });
    await expect(holds.hold(request(capped.id, 1))).resolves.toMatch(/^hold_/);
    await expect(holds.hold(request(capped.id, 1))).rejects.toBeInstanceOf(TooManyTextRequests);
  });

  test('a video charge cannot spend what text requests hold, nor can a quota removal', async () => {
    const key = await keys.issue('mixed', { quota: 1_000_000 });
    const holds = new TextHolds(opened.db, 10, silent);
    const holdId = await holds.hold(request(key.id, 900_000));
    await expect(billing.chargeTask({ keyId: key.id, taskId: `t-${key.id}`, kind: 'video', model: 'vidgen3', amount: 200_000 })).rejects.toBeInstanceOf(
      InsufficientBalance,
    );
    await expect(billing.grant(key.id, -200_000, 'claw back', `g-${key.id}`)).rejects.toBeInstanceOf(InsufficientBalance);
    await new UsageRecorder(opened.db, silent, DEFAULT_PRICES).settle({ holdId, keyId: key.id, usage: null });
    await expect(billing.chargeTask({ keyId: key.id, taskId: `t-${key.id}`, kind: 'video', model: 'vidgen3', amount: 200_000 })).resolves.toBe('charged');
    await billing.refundTask(`t-${key.id}`, 'test over');
  });

  test('the holds of a process that stopped beating are settled in full by another, once; its own late settlement bills nothing', async () => {
    const key = await keys.issue('orphans', { quota: 100_000 });
    const dead = new TextHolds(opened.db, 10, silent);
    await dead.start();
    dead.stop();
    const holdIds = await Promise.all([dead.hold(request(key.id, 1000)), dead.hold(request(key.id, 2000))]);
    const live = new TextHolds(opened.db, 10, silent);
    // Still beating recently: not an orphan yet.
    expect(await live.settleOrphans(60)).toBe(0);
    await opened.db.query("update gateway_instances set seen_at = now() - interval '2 minutes' where id = $1", [dead.instanceId]);
    expect(await live.settleOrphans(60)).toBe(2);
    expect(await live.settleOrphans(60)).toBe(0);
    expect(await billing.balance(key.id)).toEqual({ limited: true, balance: 97_000, held: 0 });
    const orphaned = (await new UsageRecorder(opened.db, silent, DEFAULT_PRICES).recent(key.id, 10)).filter((r) => r.outcome === 'orphaned');
    expect(orphaned).toHaveLength(2);

    // The dead process comes back and settles: its holds are gone, nothing is billed twice.
    const usage = new UsageRecorder(opened.db, silent, DEFAULT_PRICES);
    const record = {
      keyId: key.id,
      requestId: 'req',
      model: 'cm-haiku-4.5',
      channel: 'c',
      endpoint: 'messages' as const,
      streamed: true,
      outcome: 'completed' as const,
    };
    await usage.settle({
      holdId: holdIds[0]!,
      keyId: key.id,
      usage: { ...record, inputTokens: 10, outputTokens: 10, cacheCreationTokens: 0, cacheReadTokens: 0 },
    });
    expect(await billing.balance(key.id)).toEqual({ limited: true, balance: 97_000, held: 0 });
  });
});
