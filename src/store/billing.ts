import type { Db, Sql } from './db';

/**
 * Balances and their ledger. Every movement is one ledger row and one balance update in the
 * same transaction, and (kind, ref) is unique, so however often a step is retried a task is
 * charged once and refunded once. Balances change only by `balance = balance + $delta` under
 * the key's row lock, never by read-modify-write, in both stores.
 */
export type LedgerKind = 'grant' | 'charge' | 'refund' | 'usage';
export type BilledTaskKind = 'video' | 'character';

export interface LedgerEntryView {
  id: number;
  object: 'ledger_entry';
  kind: LedgerKind;
  /** Credits: positive adds to the balance, negative takes from it. */
  amount: number;
  /** The task id, the usage record id, or the grant's reference. */
  ref: string;
  reason: string;
  model: string | null;
  created_at: number;
}

export interface BalanceView {
  /** Credits left; null when the key is unlimited. */
  balance: number | null;
  /** Credits spent net of refunds (charges + usage − refunds), every key. */
  spent: number;
  granted: number;
  tasksInFlight: number;
}

export interface TaskCharge {
  keyId: string;
  taskId: string;
  kind: BilledTaskKind;
  model: string;
  amount: number;
}

export interface UsageCharge {
  keyId: string;
  /** The usage record's id: one usage entry per record. */
  ref: string;
  model: string;
  amount: number;
}

/** The key's balance does not cover the price. */
export class InsufficientBalance extends Error {
  constructor(
    readonly balance: number,
    readonly price: number,
  ) {
    super(`balance ${balance} < price ${price}`);
  }
}

/** The key already has its maximum of video tasks in flight. */
export class TooManyTasksInFlight extends Error {
  constructor(readonly limit: number) {
    super(`${limit} tasks in flight`);
  }
}

export class UnknownKey extends Error {}

interface KeyBillingRow {
  limited: boolean;
  balance: string | number;
  max_concurrent_tasks: number | null;
}

const num = (v: string | number | null | undefined): number => Number(v ?? 0);

export class BillingStore {
  constructor(private readonly db: Db) {}

  /**
   * Charges a task before anything is started for it. Under the key's row lock: the
   * in-flight count and the balance are checked and the charge written in one transaction,
   * so 50 concurrent creates on a quota for 5 accept exactly 5. Charging a task id again is a
   * no-op ('already'), which makes the charge idempotent by task id.
   */
  async chargeTask(charge: TaskCharge): Promise<'charged' | 'already'> {
    return this.db.transaction(async (tx) => {
      const key = await lockKey(tx, charge.keyId);
      const [existing] = await tx.query('select 1 from billed_tasks where task_id = $1', [charge.taskId]);
      if (existing) return 'already';
      if (charge.kind === 'video' && key.max_concurrent_tasks !== null) {
        const [row] = await tx.query<{ n: number }>(
          "select count(*)::int as n from billed_tasks where key_id = $1 and kind = 'video' and state = 'running'",
          [charge.keyId],
        );
        if ((row?.n ?? 0) >= key.max_concurrent_tasks) throw new TooManyTasksInFlight(key.max_concurrent_tasks);
      }
      if (key.limited && num(key.balance) < charge.amount) throw new InsufficientBalance(num(key.balance), charge.amount);
      await tx.query(
        "insert into billed_tasks (task_id, key_id, kind, model, amount, state) values ($1, $2, $3, $4, $5, 'running')",
        [charge.taskId, charge.keyId, charge.kind, charge.model, charge.amount],
      );
      await move(tx, charge.keyId, 'charge', -charge.amount, charge.taskId, `${charge.kind} task`, charge.model);
      return 'charged';
    });
  }

  /**
   * Refunds a running task's charge, once: the state change running -> refunded is the
   * guard, so a second call (an activity retried, the reconciler racing the workflow) finds
   * nothing to do. A completed task is never refunded. True when this call refunded.
   */
  async refundTask(taskId: string, reason: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const [task] = await tx.query<{ key_id: string; amount: string | number; model: string }>(
        "update billed_tasks set state = 'refunded', settled_at = now() where task_id = $1 and state = 'running' returning key_id, amount, model",
        [taskId],
      );
      if (!task) return false;
      await lockKey(tx, task.key_id);
      await move(tx, task.key_id, 'refund', num(task.amount), taskId, reason, task.model);
      return true;
    });
  }

  /** The task finished: its charge stands and its in-flight slot is free. True when this call settled it. */
  async completeTask(taskId: string): Promise<boolean> {
    const rows = await this.db.query(
      "update billed_tasks set state = 'completed', settled_at = now() where task_id = $1 and state = 'running' returning task_id",
      [taskId],
    );
    return rows.length > 0;
  }

  /** Tasks charged at least `olderThanSeconds` ago and not yet settled, for the reconciler. */
  async runningTasks(olderThanSeconds: number, limit = 500): Promise<{ taskId: string; keyId: string; kind: BilledTaskKind }[]> {
    const rows = await this.db.query<{ task_id: string; key_id: string; kind: BilledTaskKind }>(
      `select task_id, key_id, kind from billed_tasks
       where state = 'running' and created_at < now() - ($1::int * interval '1 second')
       order by created_at limit $2`,
      [olderThanSeconds, limit],
    );
    return rows.map((r) => ({ taskId: r.task_id, keyId: r.key_id, kind: r.kind }));
  }

  /**
   * Adds (or with a negative delta removes) credits of a limited key. A removal never takes
   * the balance below zero. The new balance; throws UnknownKey / InsufficientBalance.
   */
  async grant(keyId: string, delta: number, reason: string, ref: string): Promise<number> {
    return this.db.transaction(async (tx) => {
      const key = await lockKey(tx, keyId);
      if (!key.limited) throw new UnknownKey(`key ${keyId} is unlimited`);
      if (num(key.balance) + delta < 0) throw new InsufficientBalance(num(key.balance), -delta);
      return move(tx, keyId, 'grant', delta, ref, reason, null);
    });
  }

  /**
   * Text usage, inside the transaction that writes its usage records: one entry per record
   * and one balance update per key. Usage is billed even past zero (the answer was already
   * given); the next request is refused instead.
   */
  async billUsage(tx: Sql, charges: readonly UsageCharge[]): Promise<void> {
    const billable = charges.filter((c) => c.amount > 0);
    if (billable.length === 0) return;
    const params: unknown[] = [];
    const tuples = billable.map((c) => {
      params.push(c.keyId, -c.amount, c.ref, c.model);
      const b = params.length - 4;
      return `($${b + 1}, 'usage', $${b + 2}::bigint, $${b + 3}, 'text usage', $${b + 4})`;
    });
    const inserted = await tx.query<{ key_id: string; amount: string | number }>(
      `insert into ledger_entries (key_id, kind, amount, ref, reason, model) values ${tuples.join(',')}
       on conflict (kind, ref) do nothing returning key_id, amount`,
      params,
    );
    const perKey = new Map<string, number>();
    for (const r of inserted) perKey.set(r.key_id, (perKey.get(r.key_id) ?? 0) + num(r.amount));
    // In key order, so two flushes touching the same keys cannot deadlock.
    for (const [keyId, delta] of [...perKey].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      await tx.query('update api_keys set balance = balance + $2 where id = $1', [keyId, delta]);
    }
  }

  /** The key's balance now (null when unlimited) or null when there is no such key. */
  async balance(keyId: string): Promise<{ limited: boolean; balance: number } | null> {
    const [row] = await this.db.query<KeyBillingRow>('select limited, balance, max_concurrent_tasks from api_keys where id = $1', [keyId]);
    return row ? { limited: row.limited, balance: num(row.balance) } : null;
  }

  async view(keyId: string): Promise<BalanceView | null> {
    const [row] = await this.db.query<{ limited: boolean; balance: string | number; granted: string | number; spent: string | number; in_flight: number }>(
      `select k.limited, k.balance,
              (select coalesce(sum(amount), 0) from ledger_entries where key_id = k.id and kind = 'grant') as granted,
              (select coalesce(-sum(amount), 0) from ledger_entries where key_id = k.id and kind <> 'grant') as spent,
              (select count(*)::int from billed_tasks where key_id = k.id and kind = 'video' and state = 'running') as in_flight
       from api_keys k where k.id = $1`,
      [keyId],
    );
    if (!row) return null;
    return { balance: row.limited ? num(row.balance) : null, spent: num(row.spent), granted: num(row.granted), tasksInFlight: row.in_flight };
  }

  /** The key's ledger, newest first; `before` pages back by entry id. */
  async ledger(keyId: string, limit: number, before?: number): Promise<LedgerEntryView[]> {
    const rows = await this.db.query<{ id: string | number; kind: LedgerKind; amount: string | number; ref: string; reason: string; model: string | null; created_at: Date | string }>(
      `select id, kind, amount, ref, reason, model, created_at from ledger_entries
       where key_id = $1 and ($3::bigint is null or id < $3::bigint) order by id desc limit $2`,
      [keyId, limit, before ?? null],
    );
    return rows.map((r) => ({
      id: num(r.id),
      object: 'ledger_entry',
      kind: r.kind,
      amount: num(r.amount),
      ref: r.ref,
      reason: r.reason,
      model: r.model,
      created_at: Math.floor(new Date(r.created_at).getTime() / 1000),
    }));
  }
}

async function lockKey(tx: Sql, keyId: string): Promise<KeyBillingRow> {
  const [key] = await tx.query<KeyBillingRow>('select limited, balance, max_concurrent_tasks from api_keys where id = $1 for update', [keyId]);
  if (!key) throw new UnknownKey(`no key ${keyId}`);
  return key;
}

/** One ledger entry and the matching balance change; the balance after it. */
async function move(tx: Sql, keyId: string, kind: LedgerKind, amount: number, ref: string, reason: string, model: string | null): Promise<number> {
  const inserted = await tx.query(
    'insert into ledger_entries (key_id, kind, amount, ref, reason, model) values ($1, $2, $3, $4, $5, $6) on conflict (kind, ref) do nothing returning id',
    [keyId, kind, amount, ref, reason, model],
  );
  const [row] = inserted.length > 0
    ? await tx.query<{ balance: string | number }>('update api_keys set balance = balance + $2 where id = $1 returning balance', [keyId, amount])
    : await tx.query<{ balance: string | number }>('select balance from api_keys where id = $1', [keyId]);
  return num(row?.balance);
}
