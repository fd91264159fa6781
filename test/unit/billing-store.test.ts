/**
 * The ledger on both stores (PGlite and PostgreSQL on 127.0.0.1:5432): charges race under
 * the key's row lock, refunds happen once, usage is billed with its records, and every
 * balance equals the sum of its ledger (the audit) after each scenario.
 */
import pino from 'pino';
import { DEFAULT_PRICES } from '../../src/billing/prices';
import { BillingStore, InsufficientBalance, TooManyTasksInFlight, UnknownKey, type TaskCharge } from '../../src/billing/ledger';
import { ChargeQueue } from '../../src/billing/charge-queue';
import type { Db } from '../../src/store/db';
import { KeyStore } from '../../src/store/keys';
import { TextHolds } from '../../src/billing/text-holds';
import { UsageRecorder } from '../../src/billing/usage';
import { BOTH_STORES, auditAndClose, openLedgerStore, type OpenedStore } from '../support/stores';

const PRICE = 1_000_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(BOTH_STORES)('%s', (_name, open) => {
  let opened: OpenedStore;
  let keys: KeyStore;
  let billing: BillingStore;
  beforeAll(async () => {
    ({ opened, keys, billing } = await openLedgerStore(open));
  }, 60_000);
  afterAll(async () => expect(await auditAndClose(opened)).toEqual([]));

  const charge = (keyId: string, taskId: string, amount = PRICE) => billing.chargeTask({ keyId, taskId, kind: 'video', model: 'vidgen3', amount });
  const balanceOf = async (keyId: string) => (await billing.balance(keyId))?.balance;

  // The same races with each charge its own statement, and through the API's queue (a burst of
  // one key in one transaction), and through two queues at once (two API replicas).
  const queues = (n: number) => Array.from({ length: n }, () => new ChargeQueue(billing));
  const chargePaths: [string, () => (c: TaskCharge) => Promise<'charged' | 'already'>][] = [
    ['one statement each', () => (c) => billing.chargeTask(c)],
    [
      'one queue',
      () => {
        const [q] = queues(1);
        return (c) => q!.charge(c);
      },
    ],
    [
      'two queues',
      () => {
        const qs = queues(2);
        let i = 0;
        return (c) => qs[i++ % 2]!.charge(c);
      },
    ],
  ];
  const video = (keyId: string, taskId: string, amount = PRICE): TaskCharge => ({ keyId, taskId, kind: 'video', model: 'vidgen3', amount });

  test.each(chargePaths)('50 concurrent charges on a quota for 5 (%s): exactly 5 succeed, balance exactly 0', async (_path, makeCharge) => {
    const chargeVia = makeCharge();
    const key = await keys.issue('race', { quota: 5 * PRICE });
    const results = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => chargeVia(video(key.id, `race-${key.id}-${i}`))));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(5);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(refused).toHaveLength(45);
    for (const r of refused) expect(r.reason).toBeInstanceOf(InsufficientBalance);
    expect(await balanceOf(key.id)).toBe(0);
    expect((await billing.ledger(key.id, 100)).filter((e) => e.kind === 'charge')).toHaveLength(5);
  });

  test('a batch of one key is decided in order as single charges would be: each against what those before it left', async () => {
    const key = await keys.issue('batch', { quota: 6 * PRICE });
    const id = (x: string) => `batch-${key.id}-${x}`;
    expect(await charge(key.id, id('before'))).toBe('charged');
    const outcomes = await billing.chargeTasksOfKey([
      video(key.id, id('a'), 3 * PRICE),
      video(key.id, id('b'), 3 * PRICE), // 2 left: refused
      video(key.id, id('c'), 2 * PRICE), // cheaper, fits
      video(key.id, id('before')), // charged before this batch
      video(key.id, id('a'), 3 * PRICE), // earlier in this batch
      video(key.id, id('d'), 1),
    ]);
    expect(
      outcomes.map((o) => (typeof o === 'string' ? o : o instanceof InsufficientBalance ? `InsufficientBalance:${o.balance}` : o.constructor.name)),
    ).toEqual(['charged', `InsufficientBalance:${2 * PRICE}`, 'charged', 'already', 'already', 'InsufficientBalance:0']);
    expect(await balanceOf(key.id)).toBe(0);
    const charges = (await billing.ledger(key.id, 100)).filter((e) => e.kind === 'charge');
    expect(charges.map((e) => [e.ref, e.amount]).sort()).toEqual(
      [
        [id('a'), -3 * PRICE],
        [id('before'), -PRICE],
        [id('c'), -2 * PRICE],
      ].sort(),
    );
    expect((await billing.view(key.id))?.tasksInFlight).toBe(3);
    // Tasks in flight: one slot left takes the first video; a character needs no slot.
    const slots = await keys.issue('batch-slots', { maxConcurrentTasks: 2 });
    await charge(slots.id, `bs-${slots.id}-0`);
    const slotOutcomes = await billing.chargeTasksOfKey([
      video(slots.id, `bs-${slots.id}-1`),
      video(slots.id, `bs-${slots.id}-2`),
      { ...video(slots.id, `bs-${slots.id}-c`), kind: 'character', model: 'character' },
    ]);
    expect(slotOutcomes.map((o) => (typeof o === 'string' ? o : o.constructor.name))).toEqual(['charged', 'TooManyTasksInFlight', 'charged']);
    expect((await billing.view(slots.id))?.tasksInFlight).toBe(2);
    await expect(billing.chargeTasksOfKey([video(slots.id, 'x'), video(key.id, 'y')])).rejects.toThrow(/one key/);
    await expect(billing.chargeTasksOfKey([video('key_none', 'x'), video('key_none', 'y')])).rejects.toBeInstanceOf(UnknownKey);
  });

  test('the queue sends a burst of one key as one statement, and a failed statement fails only its own charges', async () => {
    const key = await keys.issue('burst', { quota: 100 * PRICE });
    let statements = 0;
    let failAt = 0; // the number of the statement that fails (none: 0)
    // Each statement takes 20 ms, so charges can arrive while one runs, on either store.
    const counted: Db = {
      ...opened.db,
      kind: opened.db.kind,
      query: async (text, params) => {
        const n = ++statements;
        await sleep(20);
        if (n === failAt) throw new Error('connection reset');
        return opened.db.query(text, params);
      },
      transaction: (fn) => opened.db.transaction(fn),
    };
    const queue = new ChargeQueue(new BillingStore(counted));
    // A burst arriving together goes as one statement.
    const burst = await Promise.all(Array.from({ length: 50 }, (_, i) => queue.charge(video(key.id, `burst-${key.id}-${i}`))));
    expect(burst.every((o) => o === 'charged')).toBe(true);
    expect(statements).toBe(1);
    expect(await balanceOf(key.id)).toBe(50 * PRICE);
    /** One charge, then two more once its statement runs: two statements. */
    const inTwoStatements = async (prefix: string) => {
      const first = queue.charge(video(key.id, `${prefix}-${key.id}-0`));
      await sleep(5);
      const rest = [1, 2].map((i) => queue.charge(video(key.id, `${prefix}-${key.id}-${i}`)));
      return Promise.allSettled([first, ...rest]);
    };
    // The lone first charge fails; the two that waited for it go on together.
    failAt = statements + 1;
    const lone = await inTwoStatements('lone');
    expect(lone.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    // The batch fails; the lone first stands.
    failAt = statements + 2;
    const batch = await inTwoStatements('batch');
    expect(batch.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
    // Nothing of a failed statement was kept: charged again, each is charged once.
    expect(await queue.charge(video(key.id, `lone-${key.id}-0`))).toBe('charged');
    expect(await queue.charge(video(key.id, `batch-${key.id}-1`))).toBe('charged');
    expect(await balanceOf(key.id)).toBe((100 - 50 - 2 - 1 - 2) * PRICE);
  });

  test('a task is charged once however often the charge is repeated, refunded once however often the refund is', async () => {
    const key = await keys.issue('once', { quota: 3 * PRICE });
    expect(await charge(key.id, `t-${key.id}`)).toBe('charged');
    expect(await charge(key.id, `t-${key.id}`)).toBe('already');
    expect(await balanceOf(key.id)).toBe(2 * PRICE);
    const refunds = await Promise.all(Array.from({ length: 10 }, () => billing.refundTask(`t-${key.id}`, 'upstream failed')));
    expect(refunds.filter((r) => r === 'moved')).toHaveLength(1);
    expect(await balanceOf(key.id)).toBe(3 * PRICE);
    // A completed task is never refunded.
    await charge(key.id, `done-${key.id}`);
    expect(await billing.completeTask(`done-${key.id}`)).toBe('moved');
    expect(await billing.refundTask(`done-${key.id}`, 'late')).toBe('completed');
    expect(await balanceOf(key.id)).toBe(2 * PRICE);
    const kinds = (await billing.ledger(key.id, 100)).map((e) => `${e.kind}:${e.amount}`);
    expect(kinds.sort()).toEqual([`charge:${-PRICE}`, `charge:${-PRICE}`, `grant:${3 * PRICE}`, `refund:${PRICE}`].sort());
  });

  test("a background response's hold: released in full once however often it is settled, its usage billed once, at most the hold", async () => {
    const key = await keys.issue('response', { quota: 10 * PRICE });
    const usage = {
      inputTokens: 100,
      outputTokens: 200,
      cacheCreationTokens: 0,
      cacheReadTokens: 0,
      requestId: 'req_1',
      channel: 'resp',
      outcome: 'completed' as const,
    };
    const respond = (id: string, amount = PRICE) => billing.chargeTask({ keyId: key.id, taskId: id, kind: 'response', model: 'o3-pro', amount });
    await respond(`r1-${key.id}`);
    expect(await balanceOf(key.id)).toBe(9 * PRICE);
    const settles = await Promise.all(Array.from({ length: 10 }, () => billing.settleResponse(`r1-${key.id}`, { ...usage, price: 1234 })));
    expect(settles.filter((s) => s === 'moved')).toHaveLength(1);
    expect(settles.filter((s) => s !== 'moved')).toEqual(Array(9).fill('completed'));
    expect(await balanceOf(key.id)).toBe(10 * PRICE - 1234);
    // Usage dearer than the hold is billed at the hold: the key never pays more than it held.
    await respond(`r2-${key.id}`, 1000);
    expect(await billing.settleResponse(`r2-${key.id}`, { ...usage, price: 5000 })).toBe('moved');
    expect(await balanceOf(key.id)).toBe(10 * PRICE - 1234 - 1000);
    // Nothing known (failed, or cancelled with no usage): released in full.
    await respond(`r3-${key.id}`);
    expect(await billing.settleResponse(`r3-${key.id}`, null)).toBe('moved');
    expect(await billing.settleResponse(`r3-${key.id}`, { ...usage, price: 1 })).toBe('refunded');
    expect(await balanceOf(key.id)).toBe(10 * PRICE - 1234 - 1000);
    // A video task's charge is not a hold: settleResponse leaves it alone.
    await charge(key.id, `v-${key.id}`);
    expect(await billing.settleResponse(`v-${key.id}`, null)).toBe('charged');
    const kinds = (await billing.ledger(key.id, 100)).map((e) => `${e.kind}:${e.amount}`);
    expect(kinds.filter((k) => k.startsWith('usage:')).sort()).toEqual(['usage:-1000', 'usage:-1234']);
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

  describe('the charge lifecycle: every edge from every state (billing/charge-lifecycle.ts CHARGE_EDGES)', () => {
    type Start = 'charged' | 'started' | 'completed' | 'refunded' | 'missing';
    /** A task of a fresh key brought to `state` by the edges that lead there. */
    async function taskIn(state: Start): Promise<{ keyId: string; taskId: string }> {
      const key = await keys.issue(`life-${state}`, { quota: 10 * PRICE });
      const taskId = `life-${state}-${key.id}`;
      if (state === 'missing') return { keyId: key.id, taskId };
      await charge(key.id, taskId);
      if (state === 'started' || state === 'completed') expect(await billing.claimTask(taskId)).toBe('moved');
      if (state === 'completed') expect(await billing.completeTask(taskId)).toBe('moved');
      if (state === 'refunded') expect(await billing.refundTask(taskId, 'failed')).toBe('moved');
      return { keyId: key.id, taskId };
    }
    const edges = {
      claim: (id: string) => billing.claimTask(id),
      complete: (id: string) => billing.completeTask(id),
      refund: (id: string) => billing.refundTask(id, 'failed'),
      refundUnstarted: (id: string) => billing.refundTask(id, 'never started', 'refundUnstarted'),
    };
    // What each edge does from each state: 'moved', or the state it leaves alone (and reports).
    const table: [keyof typeof edges, Start, string, number][] = [
      // edge, from, outcome, balance after (of 10 granted, 1 charged)
      ['claim', 'charged', 'moved', 9],
      ['claim', 'started', 'started', 9],
      ['claim', 'completed', 'completed', 9],
      ['claim', 'refunded', 'refunded', 10],
      ['claim', 'missing', 'missing', 10],
      ['complete', 'charged', 'moved', 9],
      ['complete', 'started', 'moved', 9],
      ['complete', 'completed', 'completed', 9],
      ['complete', 'refunded', 'refunded', 10],
      ['complete', 'missing', 'missing', 10],
      ['refund', 'charged', 'moved', 10],
      ['refund', 'started', 'moved', 10],
      ['refund', 'completed', 'completed', 9],
      ['refund', 'refunded', 'refunded', 10],
      ['refund', 'missing', 'missing', 10],
      ['refundUnstarted', 'charged', 'moved', 10],
      ['refundUnstarted', 'started', 'started', 9],
      ['refundUnstarted', 'completed', 'completed', 9],
      ['refundUnstarted', 'refunded', 'refunded', 10],
      ['refundUnstarted', 'missing', 'missing', 10],
    ];
    test.each(table)('%s from %s: %s', async (edge, from, outcome, balance) => {
      const { keyId, taskId } = await taskIn(from);
      expect(await edges[edge](taskId)).toBe(outcome);
      expect(await balanceOf(keyId)).toBe(balance * PRICE);
      // Slots: a live charge (charged, started) holds one; the others none.
      const [row] = await opened.db.query<{ state: string | null }>('select state from billed_tasks where task_id = $1', [taskId]);
      expect((await billing.view(keyId))?.tasksInFlight).toBe(row && ['charged', 'started'].includes(row.state ?? '') ? 1 : 0);
    });

    test('racing movers: of a claim and a refund-unstarted, exactly one wins, whichever it is', async () => {
      for (let i = 0; i < 10; i++) {
        const { keyId, taskId } = await taskIn('charged');
        const [claim, refund] = await Promise.all([billing.claimTask(taskId), billing.refundTask(taskId, 'lost start', 'refundUnstarted')]);
        expect([claim, refund].filter((o) => o === 'moved')).toHaveLength(1);
        expect(await balanceOf(keyId)).toBe((claim === 'moved' ? 9 : 10) * PRICE);
      }
    });

    test('a charge taken ahead is not due for the reconciler before its window', async () => {
      const key = await keys.issue('ahead', { quota: 10 * PRICE });
      await billing.chargeTask({ ...video(key.id, `ahead-${key.id}`), firstCheckAfterSeconds: 300 });
      await billing.chargeTask(video(key.id, `plain-${key.id}`));
      const due = (await billing.chargesDueForCheck(-60, 10_000)).map((t) => t.taskId).filter((id) => id.endsWith(key.id));
      expect(due).toEqual([`plain-${key.id}`]);
    });
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

  test('background responses share the slots of video tasks: each settle or refund frees its own, a character takes none', async () => {
    const key = await keys.issue('slots-shared', { maxConcurrentTasks: 2 });
    const respond = (id: string) => billing.chargeTask({ keyId: key.id, taskId: id, kind: 'response', model: 'o3-pro', amount: PRICE });
    await respond(`sr1-${key.id}`);
    await charge(key.id, `sv1-${key.id}`);
    await expect(respond(`sr2-${key.id}`)).rejects.toBeInstanceOf(TooManyTasksInFlight);
    await expect(charge(key.id, `sv2-${key.id}`)).rejects.toBeInstanceOf(TooManyTasksInFlight);
    await expect(billing.chargeTask({ keyId: key.id, taskId: `sc1-${key.id}`, kind: 'character', model: 'motion-1', amount: PRICE })).resolves.toBe('charged');
    expect((await billing.view(key.id))?.tasksInFlight).toBe(2);
    // Settled (twice: the second finds it settled and frees nothing more).
    await billing.settleResponse(`sr1-${key.id}`, null);
    await billing.settleResponse(`sr1-${key.id}`, null);
    expect((await billing.view(key.id))?.tasksInFlight).toBe(1);
    await respond(`sr2-${key.id}`);
    // A response refunded from outside its run (the reconciler) frees its slot too.
    expect(await billing.refundTask(`sr2-${key.id}`, 'stopped')).toBe('moved');
    expect((await billing.view(key.id))?.tasksInFlight).toBe(1);
  });

  test.each(chargePaths)('50 concurrent charges with 3 tasks in flight allowed (%s): exactly 3 succeed', async (_path, makeCharge) => {
    const chargeVia = makeCharge();
    const key = await keys.issue('slot-race', { maxConcurrentTasks: 3 });
    const results = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => chargeVia(video(key.id, `slot-race-${key.id}-${i}`))));
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

  test('text usage is billed with its records when its hold is settled, priced from the reported tokens', async () => {
    const key = await keys.issue('text', { quota: 1_000_000 });
    const holds = new TextHolds(opened.db, 10, pino({ level: 'silent' }));
    const usage = new UsageRecorder(opened.db, pino({ level: 'silent' }), DEFAULT_PRICES);
    const record = {
      keyId: key.id,
      requestId: 'req',
      model: 'cm-sonnet-4.5',
      channel: 'c',
      endpoint: 'messages' as const,
      streamed: true,
      outcome: 'aborted' as const,
    };
    const hold = () => holds.hold({ keyId: key.id, requestId: 'req', model: 'cm-sonnet-4.5', endpoint: 'messages', streamed: true, amount: 10_000 });
    const [a, b] = await Promise.all([hold(), hold()]);
    expect(await billing.balance(key.id)).toMatchObject({ balance: 1_000_000, held: 20_000 });
    // 1000 in + 200 out at $3/$15 per MTok = 3000 + 3000 credits; 10 cache reads at $0.30 = 3.
    await Promise.all([
      usage.settle({ holdId: a, keyId: key.id, usage: { ...record, inputTokens: 1000, outputTokens: 200, cacheCreationTokens: 0, cacheReadTokens: 10 } }),
      usage.settle({ holdId: b, keyId: key.id, usage: { ...record, inputTokens: 1, outputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0 } }),
    ]);
    expect(await billing.balance(key.id)).toMatchObject({ balance: 1_000_000 - 6006, held: 0 });
    const entries = await billing.ledger(key.id, 10);
    expect(
      entries
        .filter((e) => e.kind === 'usage')
        .map((e) => e.amount)
        .sort((x, y) => x - y),
    ).toEqual([-6003, -3]);
    // Settling a hold again (a retried write) bills nothing more.
    await usage.settle({ holdId: a, keyId: key.id, usage: { ...record, inputTokens: 1000, outputTokens: 200, cacheCreationTokens: 0, cacheReadTokens: 10 } });
    expect(await balanceOf(key.id)).toBe(1_000_000 - 6006);
    await usage.close();
  });

  test.each([
    ['after the commit (the answer was lost)', 'after'],
    ['before the commit', 'before'],
  ] as const)('a settlement whose write fails %s is retried and billed exactly once', async (_when, when) => {
    const key = await keys.issue(`retry-${when}`, { quota: 1_000_000 });
    // The store's transaction fails once, on the side of the commit the test names.
    let failures = 1;
    // The settle statement runs alone on the embedded store and in a transaction on PostgreSQL:
    // whichever carries it fails once.
    const failOnce = async <T>(run: () => Promise<T>): Promise<T> => {
      if (failures > 0 && when === 'before') {
        failures--;
        throw new Error('connection reset before commit');
      }
      const result = await run();
      if (failures > 0) {
        failures--;
        throw new Error('connection reset after commit');
      }
      return result;
    };
    const flaky: Db = {
      ...opened.db,
      kind: opened.db.kind,
      query: (text, params) => (text.includes('text_holds h using input') ? failOnce(() => opened.db.query(text, params)) : opened.db.query(text, params)),
      transaction: (fn) => failOnce(() => opened.db.transaction(fn)),
    };
    const holds = new TextHolds(opened.db, 10, pino({ level: 'silent' }));
    const usage = new UsageRecorder(flaky, pino({ level: 'silent' }), DEFAULT_PRICES);
    const holdId = await holds.hold({ keyId: key.id, requestId: 'req', model: 'cm-sonnet-4.5', endpoint: 'messages', streamed: false, amount: 5000 });
    const record = {
      keyId: key.id,
      requestId: 'req',
      model: 'cm-sonnet-4.5',
      channel: 'c',
      endpoint: 'messages' as const,
      streamed: false,
      outcome: 'completed' as const,
    };
    // Resolves only once a write went through: the failed one is retried after a second.
    await usage.settle({ holdId, keyId: key.id, usage: { ...record, inputTokens: 1000, outputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0 } });
    expect(failures).toBe(0);
    expect(await billing.balance(key.id)).toMatchObject({ balance: 1_000_000 - 3000, held: 0 });
    expect((await billing.ledger(key.id, 10)).filter((e) => e.kind === 'usage').map((e) => e.amount)).toEqual([-3000]);
    await usage.close();
  });
});
