/**
 * `npm run audit:ledger`: recomputes every balance from its ledger and checks each paid task's
 * entries against its billing state; prints the mismatches and exits 1 when there are any.
 * Reads the store the gateway is configured with (DATABASE_URL, or the embedded store in
 * DATA_DIR, which only one process may open: stop the gateway or use GET /admin/audit).
 */
import { SLOT_KINDS_SQL } from './charge-lifecycle';
import { num } from './ledger';
import type { Sql } from '../store/db';

export interface AuditMismatch {
  key_id: string;
  /** What is wrong, in words. */
  problem: string;
  ref?: string;
  expected?: number;
  actual?: number;
}

export interface AuditReport {
  object: 'ledger_audit';
  keys: number;
  entries: number;
  tasks: number;
  mismatches: AuditMismatch[];
}

export async function auditLedger(db: Sql): Promise<AuditReport> {
  const balances = await db.query<{ id: string; balance: string | number; ledger: string | number; entries: string | number }>(
    `select k.id, k.balance,
            (select coalesce(sum(amount), 0) from ledger_entries where key_id = k.id)
              - (select coalesce(sum(price), 0) from usage_records where key_id = k.id) as ledger,
            (select count(*) from ledger_entries where key_id = k.id)
              + (select count(*) from usage_records where key_id = k.id and price > 0) as entries
     from api_keys k order by k.id`,
  );
  const mismatches: AuditMismatch[] = [];
  for (const b of balances) {
    if (num(b.balance) !== num(b.ledger)) {
      mismatches.push({ key_id: b.id, problem: 'balance differs from the sum of its ledger', expected: num(b.ledger), actual: num(b.balance) });
    }
  }
  // Each paid task: exactly one charge of its price; a refund (of the same amount) exactly
  // when its state is refunded. The unique (kind, ref) makes "more than one" impossible, so
  // what can go wrong is a missing or extra entry and a wrong amount.
  const tasks = await db.query<{
    task_id: string;
    key_id: string;
    kind: string;
    amount: string | number;
    state: string;
    charged: string | number | null;
    refunded: string | number | null;
  }>(
    `select t.task_id, t.key_id, t.kind, t.amount, t.state,
            (select sum(amount) from ledger_entries where kind = 'charge' and ref = t.task_id) as charged,
            (select sum(amount) from ledger_entries where kind = 'refund' and ref = t.task_id) as refunded
     from billed_tasks t`,
  );
  for (const t of tasks) {
    if (t.charged === null || num(t.charged) !== -num(t.amount)) {
      mismatches.push({
        key_id: t.key_id,
        ref: t.task_id,
        problem: 'task charge missing or of the wrong amount',
        expected: -num(t.amount),
        actual: t.charged === null ? undefined : num(t.charged),
      });
    }
    // A background response's charge is its hold: released in full however it ended (its usage is billed apart).
    const wantRefund = t.state === 'refunded' || (t.kind === 'response' && t.state === 'completed');
    if (wantRefund !== (t.refunded !== null) || (wantRefund && num(t.refunded) !== num(t.amount))) {
      mismatches.push({
        key_id: t.key_id,
        ref: t.task_id,
        problem: `task is ${t.state} but its refund is ${t.refunded === null ? 'missing' : num(t.refunded)}`,
        expected: wantRefund ? num(t.amount) : 0,
        actual: num(t.refunded),
      });
    }
  }
  const counters = await db.query<{ id: string; tasks_in_flight: number; running: number }>(
    `select k.id, k.tasks_in_flight,
            (select count(*)::int from billed_tasks t where t.key_id = k.id and t.kind in ${SLOT_KINDS_SQL} and t.state in ('charged', 'started')) as running
     from api_keys k`,
  );
  for (const c of counters) {
    if (c.tasks_in_flight !== c.running) {
      mismatches.push({ key_id: c.id, problem: 'tasks in flight counter differs from the running paid tasks', expected: c.running, actual: c.tasks_in_flight });
    }
  }
  // What text requests in flight hold: exactly their holds and the leases they are held from.
  const holds = await db.query<{ id: string; held: string | number; text_in_flight: number; holds: string | number; n: number }>(
    `select k.id, k.held, k.text_in_flight,
            (select coalesce(sum(amount), 0) from text_holds h where h.key_id = k.id)
              + (select coalesce(sum(amount), 0) from text_leases l where l.key_id = k.id) as holds,
            (select count(*)::int from text_holds h where h.key_id = k.id)
              + (select coalesce(sum(slots), 0)::int from text_leases l where l.key_id = k.id) as n
     from api_keys k`,
  );
  for (const h of holds) {
    if (num(h.held) !== num(h.holds))
      mismatches.push({ key_id: h.id, problem: 'held differs from the sum of its text holds and leases', expected: num(h.holds), actual: num(h.held) });
    if (h.text_in_flight !== h.n)
      mismatches.push({
        key_id: h.id,
        problem: 'text requests in flight differ from its text holds and leased slots',
        expected: h.n,
        actual: h.text_in_flight,
      });
  }
  const orphans = await db.query<{ key_id: string; ref: string; kind: string }>(
    `select l.key_id, l.ref, l.kind from ledger_entries l
     where l.kind in ('charge', 'refund') and not exists (select 1 from billed_tasks t where t.task_id = l.ref)`,
  );
  for (const o of orphans) mismatches.push({ key_id: o.key_id, ref: o.ref, problem: `${o.kind} with no paid task` });
  const entries = balances.reduce((n, b) => n + num(b.entries), 0);
  return { object: 'ledger_audit', keys: balances.length, entries, tasks: tasks.length, mismatches };
}
