/**
 * The ledger on both stores (PGlite and PostgreSQL on 127.0.0.1:5432): charges race under
 * the key's row lock, refunds happen once, usage is billed with its records, and every
 * balance equals the sum of its ledger (the audit) after each scenario.
 */
import pino from 'pino';
import { DEFAULT_PRICES } from '../../src/catalog/prices';
import { auditLedger } from '../../src/store/audit';
import { BillingStore, InsufficientBalance, TooManyTasksInFlight } from '../../src/store/billing';
import type { Db } from '../../src/store/db';
import { KeyStore } from '../../src/store/keys';
import { migrate } from '../../src/store/migrations';
import { UsageRecorder } from '../../src/store/usage';
import { BOTH_STORES, type OpenedStore } from '../support/stores';

const PRICE = 1_000_000;

describe.each(BOTH_STORES)('%s', (_name, open) => {
  let opened: OpenedStore;
  let keys: KeyStore;
  let billing: BillingStore;
  beforeAll(async () => {
    opened = await open();
    await migrate(opened.db);
    keys = new KeyStore(opened.db);
    billing = new BillingStore(opened.db);
  }, 60_000);
  afterAll(async () => {
    if (opened) expect((await auditLedger(opened.db)).mismatches).toEqual([]);
    await opened?.cleanup();
  });

  const charge = (keyId: string, taskId: string, amount = PRICE) => billing.chargeTask({ keyId, taskId, kind: 'video', model: 'vidgen3', amount });
  const balanceOf = async (keyId: string) => (await billing.balance(keyId))?.balance;

  test('50 concurrent charges on a quota for 5: exactly 5 succeed, balance exactly 0', async () => {
    const key = await keys.issue('race', { quota: 5 * PRICE });
    const results = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => charge(key.id, `race-${key.id}-${i}`)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(5);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(refused).toHaveLength(45);
    for (const r of refused) expect(r.reason).toBeInstanceOf(InsufficientBalance);
    expect(await balanceOf(key.id)).toBe(0);
  });

  test('a task is charged once however often the charge is repeated, refunded once however often the refund is', async () => {
    const key = await keys.issue('once', { quota: 3 * PRICE });
    expect(await charge(key.id, `t-${key.id}`)).toBe('charged');
    expect(await charge(key.id, `t-${key.id}`)).toBe('already');
    expect(await balanceOf(key.id)).toBe(2 * PRICE);
    const refunds = await Promise.all(Array.from({ length: 10 }, () => billing.refundTask(`t-${key.id}`, 'upstream failed')));
    expect(refunds.filter(Boolean)).toHaveLength(1);
    expect(await balanceOf(key.id)).toBe(3 * PRICE);
    // A completed task is never refunded.
    await charge(key.id, `done-${key.id}`);
    expect(await billing.completeTask(`done-${key.id}`)).toBe(true);
    expect(await billing.refundTask(`done-${key.id}`, 'late')).toBe(false);
    expect(await balanceOf(key.id)).toBe(2 * PRICE);
    const kinds = (await billing.ledger(key.id, 100)).map((e) => `${e.kind}:${e.amount}`);
    expect(kinds.sort()).toEqual([`charge:${-PRICE}`, `charge:${-PRICE}`, `grant:${3 * PRICE}`, `refund:${PRICE}`].sort());
  });

  test('the reconciler reads only due charges: unconfirmed first, started ones later, the longest overdue first', async () => {
    const key = await keys.issue('due', { quota: 10 * PRICE });
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((x) => `due-${key.id}-${x}`) as [string, string, string, string];
    for (const id of [a, b, c, d]) await charge(key.id, id);
    // Past the start window (here: none), every unsettled charge is due.
    const due = async () => (await billing.chargesDueForCheck(-1, 10_000)).map((t) => t.taskId).filter((id) => id.startsWith(`due-${key.id}`));
    expect((await due()).sort()).toEqual([a, b, c, d]);
    await billing.deferFirstCheck([a], 600); // the API saw a's workflow start
    await billing.checkAgainLater([b]); // the reconciler found b running
    await billing.completeTask(c); // c settled itself
    expect(await due()).toEqual([d]);
    // A confirmation after a look changes nothing; a start window still open hides everything.
    await billing.deferFirstCheck([b], 0);
    expect(await due()).toEqual([d]);
    expect((await billing.chargesDueForCheck(3600, 10_000)).filter((t) => t.taskId.startsWith(`due-${key.id}`))).toEqual([]);
    // b's look came due an hour ago: it goes before d, which became due only now.
    await opened.db.query("update billed_tasks set next_check_at = now() - interval '1 hour' where task_id = $1", [b]);
    expect(await due()).toEqual([b, d]);
    // Looked at again after as long as it has lived, at least a minute.
    await billing.checkAgainLater([b]);
    const [row] = await opened.db.query<{ wait: number }>(
      'select extract(epoch from next_check_at - now())::int as wait from billed_tasks where task_id = $1',
      [b],
    );
    expect(row?.wait).toBeGreaterThanOrEqual(55);
    expect(row?.wait).toBeLessThanOrEqual(60);
  });

  test('tasks in flight are limited per key; a settled task frees its slot', async () => {
    const key = await keys.issue('slots', { maxConcurrentTasks: 2 });
    await charge(key.id, `s1-${key.id}`);
    await charge(key.id, `s2-${key.id}`);
    await expect(charge(key.id, `s3-${key.id}`)).rejects.toBeInstanceOf(TooManyTasksInFlight);
    await billing.completeTask(`s1-${key.id}`);
    await expect(charge(key.id, `s3-${key.id}`)).resolves.toBe('charged');
    // Unlimited key: its balance goes negative by what it spent.
    expect(await balanceOf(key.id)).toBe(-3 * PRICE);
    expect((await billing.view(key.id))?.balance).toBeNull();
  });

  test('50 concurrent charges with 3 tasks in flight allowed: exactly 3 succeed', async () => {
    const key = await keys.issue('slot-race', { maxConcurrentTasks: 3 });
    const results = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => charge(key.id, `slot-race-${key.id}-${i}`)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(TooManyTasksInFlight);
    expect((await billing.view(key.id))?.tasksInFlight).toBe(3);
    await billing.refundTask(`slot-race-${key.id}-${results.findIndex((r) => r.status === 'fulfilled')}`, 'failed');
    expect((await billing.view(key.id))?.tasksInFlight).toBe(2);
  });

  test('grants add and remove credits, never below zero; unlimited keys take no quota', async () => {
    const key = await keys.issue('grants', { quota: 100 });
    expect(await billing.grant(key.id, 50, 'top-up', `g1-${key.id}`)).toBe(150);
    expect(await billing.grant(key.id, 50, 'top-up', `g1-${key.id}`)).toBe(150); // same ref: once
    expect(await billing.grant(key.id, -150, 'claw back', `g2-${key.id}`)).toBe(0);
    await expect(billing.grant(key.id, -1, 'too much', `g3-${key.id}`)).rejects.toBeInstanceOf(InsufficientBalance);
    const unlimited = await keys.issue('free');
    await expect(billing.grant(unlimited.id, 10, 'x', `g4-${unlimited.id}`)).rejects.toThrow(/unlimited/);
  });

  test('text usage is billed with its records, priced from the reported tokens', async () => {
    const key = await keys.issue('text', { quota: 1_000_000 });
    const usage = new UsageRecorder(opened.db, 10_000, pino({ level: 'silent' }), billing, DEFAULT_PRICES);
    const record = { keyId: key.id, requestId: 'req', model: 'cm-sonnet-4.5', channel: 'c', endpoint: 'messages' as const, streamed: true, outcome: 'aborted' as const };
    // 1000 in + 200 out at $3/$15 per MTok = 3000 + 3000 credits; 10 cache reads at $0.30 = 3.
    usage.record({ ...record, inputTokens: 1000, outputTokens: 200, cacheCreationTokens: 0, cacheReadTokens: 10 });
    usage.record({ ...record, inputTokens: 1, outputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0 });
    expect(usage.pendingFor(key.id)).toBe(6003 + 3);
    await usage.flush();
    expect(usage.pendingFor(key.id)).toBe(0);
    expect(await balanceOf(key.id)).toBe(1_000_000 - 6006);
    const entries = await billing.ledger(key.id, 10);
    expect(entries.filter((e) => e.kind === 'usage').map((e) => e.amount).sort((a, b) => a - b)).toEqual([-6003, -3]);
    await usage.close();
  });

  test.each([
    ['after the commit (the answer was lost)', 'after'],
    ['before the commit', 'before'],
  ] as const)('a usage batch whose write fails %s is retried and billed exactly once', async (_when, when) => {
    const key = await keys.issue(`retry-${when}`, { quota: 1_000_000 });
    // The store's transaction fails once, on the side of the commit the test names.
    let failures = 1;
    const flaky: Db = {
      ...opened.db,
      kind: opened.db.kind,
      query: (text, params) => opened.db.query(text, params),
      transaction: async (fn) => {
        if (failures > 0 && when === 'before') {
          failures--;
          throw new Error('connection reset before commit');
        }
        const result = await opened.db.transaction(fn);
        if (failures > 0) {
          failures--;
          throw new Error('connection reset after commit');
        }
        return result;
      },
    };
    const usage = new UsageRecorder(flaky, 10_000, pino({ level: 'silent' }), billing, DEFAULT_PRICES);
    const record = { keyId: key.id, requestId: 'req', model: 'cm-sonnet-4.5', channel: 'c', endpoint: 'messages' as const, streamed: false, outcome: 'completed' as const };
    usage.record({ ...record, inputTokens: 1000, outputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0 });
    await usage.flush();
    expect(failures).toBe(0);
    // Not known to be written, so still counted against the balance.
    expect(usage.pendingFor(key.id)).toBe(3000);
    await usage.flush();
    expect(usage.pendingFor(key.id)).toBe(0);
    expect(await balanceOf(key.id)).toBe(1_000_000 - 3000);
    expect((await billing.ledger(key.id, 10)).filter((e) => e.kind === 'usage').map((e) => e.amount)).toEqual([-3000]);
    await usage.close();
  });
});
