/**
 * Text holds taken from leases (src/billing/text-leases.ts), on both stores: what a key can
 * spend and have in flight is decided exactly as with a row per hold, although a statement runs
 * only when a lease runs short; what a lease sets aside and does not use goes back to a refused
 * video charge and to the views; each hold is in the journal before its request may go
 * upstream; and a process that dies leaves nothing set aside: the next start bills its answered
 * requests at their price and its unanswered ones in full, once. The ledger audit (held = holds
 * + leases, text in flight = holds + leased slots) is clean after every test.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { DEFAULT_PRICES } from '../../src/billing/prices';
import { BillingStore, InsufficientBalance } from '../../src/billing/ledger';
import { KeyStore } from '../../src/store/keys';
import { SettlementJournal } from '../../src/billing/settlement-journal';
import { TextHolds, TooManyTextRequests, type TextHoldRequest } from '../../src/billing/text-holds';
import { TextLeases } from '../../src/billing/text-leases';
import { UsageRecorder, type UsageRecord } from '../../src/billing/usage';
import { journalLines } from '../support/journal-folder';
import { auditLedger } from '../../src/billing/audit';
import type { Db } from '../../src/store/db';
import { BOTH_STORES, auditAndClose, openLedgerStore, type OpenedStore } from '../support/stores';

const silent = pino({ level: 'silent' });

/** One API process's billing: a journal in `dir`, leases, and the recorder that settles them. */
function process_(opened: OpenedStore, dir: string, owner: string, maxInFlight = 1000, flushMs = 0) {
  const journal = new SettlementJournal(dir, owner);
  const leases = new TextLeases(opened.db, journal, owner, maxInFlight, silent);
  const usage = new UsageRecorder(opened.db, silent, DEFAULT_PRICES, { journal, flushMs, leases, owner });
  return { journal, leases, usage };
}

describe.each(BOTH_STORES)('%s', (_name, open) => {
  let opened: OpenedStore;
  let keys: KeyStore;
  let billing: BillingStore;
  let dir: string;
  beforeAll(async () => {
    ({ opened, keys, billing } = await openLedgerStore(open));
  }, 60_000);
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leases-'));
  });
  afterEach(async () => {
    expect((await auditLedger(opened.db)).mismatches).toEqual([]);
    fs.rmSync(dir, { recursive: true, force: true });
  });
  afterAll(async () => expect(await auditAndClose(opened)).toEqual([]));

  const request = (keyId: string, amount: number): TextHoldRequest => ({
    keyId,
    requestId: 'req',
    model: 'cm-sonnet-4.5',
    endpoint: 'messages',
    streamed: false,
    amount,
  });
  const answered = (keyId: string, inputTokens: number): UsageRecord => ({
    requestId: 'req',
    keyId,
    model: 'cm-sonnet-4.5',
    channel: 'c',
    endpoint: 'messages',
    streamed: false,
    outcome: 'completed',
    inputTokens,
    outputTokens: 0,
    cacheCreationTokens: 0,
    cacheReadTokens: 0,
  });
  const leaseRows = (keyId: string) =>
    opened.db.query<{ amount: string | number; slots: number }>('select amount, slots from text_leases where key_id = $1', [keyId]);

  test('100 concurrent holds of 300 credits on a key with 2,000: exactly 6 are held, and all is given back', async () => {
    const key = await keys.issue('race', { quota: 2000 });
    const { leases, usage } = process_(opened, dir, 'gw_a');
    const results = await Promise.allSettled(Array.from({ length: 100 }, () => leases.hold(request(key.id, 300))));
    const held = results.filter((r): r is PromiseFulfilledResult<string> => r.status === 'fulfilled').map((r) => r.value);
    expect(held).toHaveLength(6);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(InsufficientBalance);
    // The lease set aside no more than the key has.
    expect((await billing.balance(key.id))!.held).toBeLessThanOrEqual(2000);

    for (const holdId of held) await usage.settle({ holdId, keyId: key.id, usage: null });
    await usage.flush(key.id);
    expect(await billing.balance(key.id)).toEqual({ limited: true, balance: 2000, held: 0 });
    expect(await leaseRows(key.id)).toEqual([]);
    await usage.close();
  });

  test('1,000 requests of a key with plenty, 50 at a time, take a statement per 16 of them at most', async () => {
    const key = await keys.issue('plenty', { quota: 1_000_000_000 });
    let statements = 0;
    const counted: Db = {
      ...opened.db,
      kind: opened.db.kind,
      query: (text, params, name) => {
        if (name?.startsWith('text_lease')) statements++;
        return opened.db.query(text, params, name);
      },
    };
    const journal = new SettlementJournal(dir, 'gw_a');
    const leases = new TextLeases(counted, journal, 'gw_a', 1000, silent);
    const usage = new UsageRecorder(opened.db, silent, DEFAULT_PRICES, { journal, flushMs: 20, leases, owner: 'gw_a' });
    const one = async () => {
      const holdId = await leases.hold(request(key.id, 10_000));
      await new Promise((r) => setImmediate(r));
      await usage.settle({ holdId, keyId: key.id, usage: answered(key.id, 1000) });
    };
    for (let round = 0; round < 20; round++) await Promise.all(Array.from({ length: 50 }, one));
    expect(statements).toBeLessThanOrEqual(1000 / 16);
    await usage.close();
    expect(await billing.balance(key.id)).toEqual({ limited: true, balance: 1_000_000_000 - 1000 * 3000, held: 0 });
  });

  test('text requests in flight are capped per key, by its own cap or the default; a settled request frees its place', async () => {
    const capped = await keys.issue('capped', { maxTextInFlight: 3 });
    const defaulted = await keys.issue('default');
    const { leases, usage } = process_(opened, dir, 'gw_a', 5);
    const race = (keyId: string) => Promise.allSettled(Array.from({ length: 10 }, () => leases.hold(request(keyId, 1))));
    const [a, b] = await Promise.all([race(capped.id), race(defaulted.id)]);
    expect(a.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    expect(b.filter((r) => r.status === 'fulfilled')).toHaveLength(5);
    for (const r of [...a, ...b]) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(TooManyTextRequests);

    const first = a.find((r): r is PromiseFulfilledResult<string> => r.status === 'fulfilled')!;
    await usage.settle({ holdId: first.value, keyId: capped.id, usage: null });
    await expect(leases.hold(request(capped.id, 1))).resolves.toMatch(/^hold_/);
    await expect(leases.hold(request(capped.id, 1))).rejects.toBeInstanceOf(TooManyTextRequests);
    // What the views read: the requests in flight, not the slots set aside.
    await usage.flush(capped.id);
    await usage.flush(defaulted.id);
    expect((await billing.view(capped.id))!.textInFlight).toBe(3);
    expect((await billing.view(defaulted.id))!.textInFlight).toBe(5);
    await usage.close();
  });

  test('a video charge gets what a lease set aside and does not use, never what its requests hold', async () => {
    const key = await keys.issue('mixed', { quota: 1_000_000 });
    const { leases, usage } = process_(opened, dir, 'gw_a');
    const holdId = await leases.hold(request(key.id, 500_000));
    // The lease took all the key had: a hold of 500,000 wants 32 of them.
    expect(await billing.balance(key.id)).toMatchObject({ held: 1_000_000 });
    const charge = (amount: number, n: number) =>
      usage.afterSettled(
        key.id,
        () => billing.chargeTask({ keyId: key.id, taskId: `t${n}-${key.id}`, kind: 'video', model: 'vidgen3', amount }),
        (err) => err instanceof InsufficientBalance,
      );
    await expect(charge(600_000, 1)).rejects.toBeInstanceOf(InsufficientBalance);
    await expect(charge(500_000, 2)).resolves.toBe('charged');
    // Nothing is left for text beside the request in flight.
    await expect(leases.hold(request(key.id, 1))).rejects.toBeInstanceOf(InsufficientBalance);
    await usage.settle({ holdId, keyId: key.id, usage: answered(key.id, 1000) });
    await usage.flush(key.id);
    // 1000 input tokens at $3/MTok: 3000 credits.
    expect(await billing.balance(key.id)).toEqual({ limited: true, balance: 1_000_000 - 500_000 - 3000, held: 0 });
    await billing.refundTask(`t2-${key.id}`, 'test over');
    await usage.close();
  });

  test("each hold is in the journal when it is taken, and its answer's price is billed once its batch is written", async () => {
    const key = await keys.issue('billed', { quota: 1_000_000 });
    const { leases, usage } = process_(opened, dir, 'gw_a', 1000, 60_000);
    const holdId = await leases.hold(request(key.id, 10_000));
    const lines = () => journalLines(dir).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines()).toEqual([expect.objectContaining({ hold: holdId, keyId: key.id, amount: 10_000 })]);
    await usage.settle({ holdId, keyId: key.id, usage: answered(key.id, 1000) });
    expect(lines()).toEqual([expect.objectContaining({ hold: holdId }), expect.objectContaining({ holdId, price: 3000, consumed: 3000 })]);
    // Not written yet (a minute's batch): the lease still holds the price.
    expect((await billing.balance(key.id))!.balance).toBe(1_000_000);
    await usage.flush(key.id);
    expect(await billing.balance(key.id)).toEqual({ limited: true, balance: 997_000, held: 0 });
    const ledger = await billing.ledger(key.id, 10);
    expect(ledger.filter((e) => e.kind === 'usage').map((e) => e.amount)).toEqual([-3000]);
    await usage.close();
    // Every entry committed: the journal is empty.
    expect(lines()).toEqual([]);
  });

  test('a process that dies mid-work: the next start bills its answered requests at their price, its unanswered ones in full, once, and returns the rest', async () => {
    const key = await keys.issue('dead', { quota: 1_000_000 });
    const dead = process_(opened, dir, 'gwdead', 1000, 600_000);
    const [answeredHold, emptyHold, openHold] = await Promise.all([
      dead.leases.hold(request(key.id, 10_000)),
      dead.leases.hold(request(key.id, 20_000)),
      dead.leases.hold(request(key.id, 40_000)),
    ]);
    await dead.usage.settle({ holdId: answeredHold, keyId: key.id, usage: answered(key.id, 1000) });
    await dead.usage.settle({ holdId: emptyHold, keyId: key.id, usage: null });
    // The process is gone here: nothing of it reached the store but its lease.
    expect((await billing.balance(key.id))!.held).toBeGreaterThan(0);

    const next = new TextHolds(opened.db, 1000, silent);
    const nextUsage = new UsageRecorder(opened.db, silent, DEFAULT_PRICES, { journal: new SettlementJournal(dir, next.instanceId), flushMs: 0 });
    const recover = (live: () => Promise<ReadonlySet<string>>) => nextUsage.recover(live);
    await next.start(recover);
    next.stop();
    expect(await billing.balance(key.id)).toEqual({ limited: true, balance: 1_000_000 - 3000 - 40_000, held: 0 });
    expect(await leaseRows(key.id)).toEqual([]);
    expect((await billing.view(key.id))!.textInFlight).toBe(0);
    const records = await opened.db.query<{ id: string; outcome: string; price: string | number }>(
      'select id, outcome, price from usage_records where key_id = $1 order by price',
      [key.id],
    );
    expect(records.map((r) => [r.id, r.outcome, Number(r.price)])).toEqual([
      [`use_${answeredHold.slice(5)}`, 'completed', 3000],
      [`use_${openHold.slice(5)}`, 'orphaned', 40_000],
    ]);
    // The journal it left is gone, and a second sweep finds nothing more.
    expect(fs.readdirSync(dir).filter((f) => f.startsWith('gwdead'))).toEqual([]);
    expect(await next.settleOrphans(0)).toBe(0);
    expect((await billing.balance(key.id))!.balance).toBe(1_000_000 - 3000 - 40_000);
    await next.retire();
    await nextUsage.close();
  });
});
