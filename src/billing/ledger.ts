import type { Db, Sql } from '../store/db';
import type { TextUsage } from '../providers/usage';
import { metrics, type StoreFigures } from '../metrics/metrics';
import { CHARGE_EDGES, LIVE_CHARGE_STATES, SLOT_KINDS_SQL, type ChargeEdge, type ChargeState, type EdgeOutcome } from './charge-lifecycle';

/**
 * Balances and their ledger. Every movement is one ledger row and one balance update in the
 * same transaction, and (kind, ref) is unique, so however often a step is retried a task is
 * charged once and refunded once. Balances change only by `balance = balance + $delta` under
 * the key's row lock, never by read-modify-write, in both stores.
 *
 * The charge lifecycle (charge-lifecycle.ts) says which movement may happen in which state.
 */
export type LedgerKind = 'grant' | 'charge' | 'refund' | 'usage';
export type BilledTaskKind = 'video' | 'character' | 'response';

/** What an edge moved: the task's kind, model and price. */
interface MovedTask {
  kind: BilledTaskKind;
  model: string;
  amount: string | number;
}

/**
 * One movement. The ledger is ledger_entries (grants, task charges and refunds) together with
 * the priced usage records (kind usage, ref = the record's id), which are written in the
 * transaction that bills them.
 */
export interface LedgerEntryView {
  /** `le_<n>` for grants, charges and refunds; the usage record's id (`use_...`) for usage. */
  id: string;
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

/** What GET .../ledger may narrow the entries to (all optional): times in unix seconds, until exclusive. */
export interface LedgerFilter {
  kind?: LedgerKind;
  model?: string;
  since?: number;
  until?: number;
}

/**
 * What the key aliased `k` has spent: charges net of refunds, plus priced text usage (usage
 * records are ledger entries of their own). One definition for the key's view and the key list.
 */
const SPENT_BY_KEY_K = `((select coalesce(-sum(amount), 0) from ledger_entries where key_id = k.id and kind <> 'grant')
  + (select coalesce(sum(price), 0) from usage_records where key_id = k.id))`;

export interface BalanceView {
  /** Credits left; null when the key is unlimited. */
  balance: number | null;
  /** Credits spent net of refunds (charges + usage − refunds), every key. */
  spent: number;
  granted: number;
  tasksInFlight: number;
  /** Credits text requests in flight hold (not spendable until they end). */
  held: number;
  textInFlight: number;
}

export interface TaskCharge {
  keyId: string;
  taskId: string;
  kind: BilledTaskKind;
  model: string;
  amount: number;
  /**
   * When the reconciler may first ask whether the task started (seconds from now); by default
   * once the start window has passed. A charge taken ahead of slow work (a character made
   * before its task starts) puts it past that work.
   */
  firstCheckAfterSeconds?: number;
}

/** What a background response produced, priced, as its settlement bills it (a usage record). */
export interface ResponseUsageRecord extends TextUsage {
  /** The create's request id. */
  requestId: string;
  channel: string;
  /** How the response ended: completed, or failed / aborted (cancelled) with partial usage. */
  outcome: 'completed' | 'failed' | 'aborted';
  /** Credits, from the price table; the settlement bills at most the hold. */
  price: number;
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

/** The key already has its maximum of tasks in flight (videos and background responses). */
export class TooManyTasksInFlight extends Error {
  constructor(readonly limit: number) {
    super(`${limit} tasks in flight`);
  }
}

export class UnknownKey extends Error {}

/** What became of one charge of a batch: charged, charged before, or refused. */
export type ChargeOutcome = 'charged' | 'already' | InsufficientBalance | TooManyTasksInFlight;

/** Quota applies only to keys issued with one. */
export class UnlimitedKey extends Error {}

interface KeyBillingRow {
  limited: boolean;
  balance: string | number;
  held: string | number;
  max_concurrent_tasks: number | null;
}

/** A bigint column as a number of credits (PostgreSQL sends int8 as a string). */
export const num = (v: string | number | null | undefined): number => Number(v ?? 0);

export class BillingStore {
  constructor(private readonly db: Db) {}

  /**
   * Charges a task before anything is started for it, in ONE statement (chargeTasksOfKey with
   * one charge): the key's row is locked, the balance and the tasks in flight (a counter on the
   * same row) are checked on its latest version, and the task row, its ledger entry and the new
   * balance are written. The row lock is held only while that statement runs, not across round
   * trips, so 50 concurrent charges on a quota for 5 accept exactly 5. Charging a task id again
   * changes nothing ('already'): the charge is idempotent by task id. Throws the refusal.
   */
  async chargeTask(charge: TaskCharge): Promise<'charged' | 'already'> {
    const [outcome] = await this.chargeTasksOfKey([charge]);
    if (outcome === 'charged' || outcome === 'already') return outcome;
    throw outcome ?? new Error('no outcome for the charge');
  }

  /**
   * Charges several tasks of ONE key in one statement: the key's row is locked once, the
   * charges are decided in their order exactly as if each were charged alone, one after the
   * other (a recursive walk carrying the balance and tasks in flight that those before each
   * left), and the accepted ones are written. A burst of creates on one key then costs one lock,
   * one round trip and one commit instead of one each. Each result is 'charged', 'already'
   * (the task id was charged before, or earlier in this batch) or the refusal (chargeTask throws
   * it).
   */
  async chargeTasksOfKey(charges: readonly TaskCharge[]): Promise<ChargeOutcome[]> {
    const keyId = charges[0]?.keyId;
    if (keyId === undefined) return [];
    if (charges.some((c) => c.keyId !== keyId)) throw new Error('chargeTasksOfKey: charges of one key only');
    const rows = await this.db.query<{
      outcome: 'charged' | 'already' | 'balance' | 'slots';
      balance_before: string | number;
      max_concurrent_tasks: number | null;
      written: boolean;
    }>(
      `with recursive key as (
         -- What text requests in flight hold is not available to a task.
         select id, limited, balance - held as balance, max_concurrent_tasks, tasks_in_flight from api_keys where id = $1 for update
       ), input as (
         select i.task_id, i.kind, i.model, i.amount, i.first_check, i.ord,
                row_number() over (partition by i.task_id order by i.ord) > 1
                  or exists (select 1 from billed_tasks b where b.task_id = i.task_id) as repeated
         from unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::int[]) with ordinality as i(task_id, kind, model, amount, first_check, ord)
       ), walk (ord, balance, in_flight, outcome, balance_before) as (
         select 0::bigint, k.balance, k.tasks_in_flight, '', k.balance from key k
         union all
         select i.ord,
                case when d.outcome = 'charged' then w.balance - i.amount else w.balance end,
                case when d.outcome = 'charged' and i.kind in ${SLOT_KINDS_SQL} then w.in_flight + 1 else w.in_flight end,
                d.outcome, w.balance
         from walk w
         join input i on i.ord = w.ord + 1
         cross join key k
         cross join lateral (select case
           when i.repeated then 'already'
           when k.limited and w.balance < i.amount then 'balance'
           when i.kind in ${SLOT_KINDS_SQL} and k.max_concurrent_tasks is not null and w.in_flight >= k.max_concurrent_tasks then 'slots'
           else 'charged' end as outcome) d
       ), task as (
         insert into billed_tasks (task_id, key_id, kind, model, amount, state, next_check_at)
         select i.task_id, $1, i.kind, i.model, i.amount, 'charged', now() + i.first_check * interval '1 second'
         from input i join walk w using (ord)
         where w.outcome = 'charged' order by i.ord
         on conflict (task_id) do nothing returning task_id, kind
       ), entry as (
         insert into ledger_entries (key_id, kind, amount, ref, reason, model)
         select $1, 'charge', -i.amount, i.task_id, i.kind || ' task', i.model from input i join task t using (task_id)
         where not i.repeated order by i.ord
         on conflict (kind, ref) do nothing returning ref, amount
       ), moved as (
         -- The balance moves by what the ledger received, so it equals its ledger whatever happens.
         update api_keys set balance = balance + (select sum(amount) from entry),
                             tasks_in_flight = tasks_in_flight + (select count(*) from task where kind in ${SLOT_KINDS_SQL} and task_id in (select ref from entry))
         where id = $1 and exists (select 1 from entry) returning id
       )
       select w.outcome, w.balance_before, k.max_concurrent_tasks,
              exists (select 1 from entry e join input i on i.task_id = e.ref where i.ord = w.ord) as written
       from walk w cross join key k where w.ord > 0 order by w.ord`,
      [
        keyId,
        charges.map((c) => c.taskId),
        charges.map((c) => c.kind),
        charges.map((c) => c.model),
        charges.map((c) => c.amount),
        charges.map((c) => c.firstCheckAfterSeconds ?? null),
      ],
      'billing_charge_tasks_of_key',
    );
    if (rows.length === 0) throw new UnknownKey(`no key ${keyId}`);
    return charges.map((c, i): ChargeOutcome => {
      const row = rows[i];
      if (!row) throw new Error(`no outcome for charge ${i} of the batch`);
      switch (row.outcome) {
        // Accepted but not written: the task id was charged meanwhile (that charge stands).
        case 'charged':
          if (!row.written) return 'already';
          metrics.tasksCreated.inc({ kind: c.kind, model: c.model });
          metrics.charges.inc({ kind: c.kind });
          metrics.chargedCredits.inc({ kind: c.kind }, c.amount);
          return 'charged';
        case 'already':
          return 'already';
        case 'balance':
          return new InsufficientBalance(num(row.balance_before), c.amount);
        case 'slots':
          return new TooManyTasksInFlight(row.max_concurrent_tasks ?? 0);
      }
    });
  }

  /**
   * The claim edge: the task's workflow takes its charge before any work. 'moved' lets the
   * task run; 'started' or 'completed' is a retried claim of a task already running or done
   * (it may run on); 'refunded' or 'missing' refuses the task.
   */
  async claimTask(taskId: string): Promise<EdgeOutcome> {
    return (await this.move(taskId, 'claim', `update billed_tasks set state = 'started' where task_id = $1 and state = any($2::text[]) returning task_id`, []))
      .outcome;
  }

  /**
   * The refund edges: a live task's charge back to its key, once (the state change is the guard,
   * so an activity retried or the reconciler racing the workflow finds nothing to do). `refund`
   * takes a failed or stopped task's charge, `refundUnstarted` only a charge never claimed. A
   * completed task is never refunded. 'moved' when this call refunded. The reason is kept on the
   * ledger entry; `code` (a bounded set: the task's error code, or why the gateway refunded)
   * labels gateway_tasks_finished_total.
   */
  async refundTask(taskId: string, reason: string, edge: 'refund' | 'refundUnstarted' = 'refund', code = 'unspecified'): Promise<EdgeOutcome> {
    const { outcome, task } = await this.move(
      taskId,
      edge,
      `with task as (
         update billed_tasks set state = 'refunded', settled_at = now() where task_id = $1 and state = any($2::text[])
         returning key_id, amount, model, kind
       ), entry as (
         insert into ledger_entries (key_id, kind, amount, ref, reason, model)
         select key_id, 'refund', amount, $1, $3, model from task
         on conflict (kind, ref) do nothing returning key_id, amount
       ), moved as (
         update api_keys k set balance = k.balance + entry.amount,
                               tasks_in_flight = k.tasks_in_flight - (case when task.kind in ${SLOT_KINDS_SQL} then 1 else 0 end)
         from entry, task where k.id = entry.key_id returning k.id
       )
       select $1 as task_id, task.kind, task.model, task.amount from moved, task`,
      [reason],
    );
    if (task) {
      metrics.tasksFinished.inc({ kind: task.kind, model: task.model, outcome: 'failed', reason: code });
      metrics.refunds.inc({ kind: task.kind });
      metrics.refundedCredits.inc({ kind: task.kind }, num(task.amount));
    }
    return outcome;
  }

  /** The complete edge: the task's file is stored, its charge stands and its video slot is free. 'refunded' refuses the completion. */
  async completeTask(taskId: string): Promise<EdgeOutcome> {
    const { outcome, task } = await this.move(
      taskId,
      'complete',
      `with task as (
         update billed_tasks set state = 'completed', settled_at = now() where task_id = $1 and state = any($2::text[]) returning task_id, key_id, kind, model, amount
       ), freed as (
         update api_keys k set tasks_in_flight = k.tasks_in_flight - 1 from task where k.id = task.key_id and task.kind in ${SLOT_KINDS_SQL} returning k.id
       )
       select task_id, kind, model, amount from task`,
      [],
    );
    if (task) metrics.tasksFinished.inc({ kind: task.kind, model: task.model, outcome: 'completed', reason: 'none' });
    return outcome;
  }

  /**
   * Settles a background response (responses/background-service.ts): its charge is the hold of
   * its worst-case price, so it is released in full (a refund of the charge, once) and, when the
   * provider reported what it produced, that is billed as a usage record at its real price, at
   * most the hold, in the same statement. The charge ends `completed` when usage was billed,
   * `refunded` when nothing was. 'moved' when this call settled it; else the state found.
   */
  async settleResponse(responseId: string, usage: ResponseUsageRecord | null): Promise<EdgeOutcome> {
    const edge: ChargeEdge = usage ? 'complete' : 'refund';
    const rows = await this.db.query<{ amount: string | number; model: string }>(
      `with task as (
         update billed_tasks set state = $3, settled_at = now()
         where task_id = $1 and kind = 'response' and state = any($2::text[])
         returning key_id, amount, model
       ), entry as (
         insert into ledger_entries (key_id, kind, amount, ref, reason, model)
         select key_id, 'refund', amount, $1, 'background response settled: its hold released', model from task
         on conflict (kind, ref) do nothing returning key_id, amount
       ), recorded as (
         insert into usage_records (id, request_id, key_id, model, channel, endpoint, streamed, outcome,
                                    input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, price)
         select $4, $5, t.key_id, t.model, $6, 'responses', false, $7, $8, $9, $10, $11, least($12::bigint, t.amount)
         from task t join entry e on e.key_id = t.key_id where $4::text is not null
         on conflict (id) do nothing returning price
       ), moved as (
         update api_keys k set balance = k.balance + entry.amount - coalesce((select sum(price) from recorded), 0),
                               tasks_in_flight = k.tasks_in_flight - 1
         from entry where k.id = entry.key_id returning k.id
       )
       select task.amount, task.model from task, moved`,
      [
        responseId,
        CHARGE_EDGES[edge].from,
        CHARGE_EDGES[edge].to,
        usage ? `use_${responseId.replace(/^resp_/, '')}` : null,
        usage?.requestId ?? '',
        usage?.channel ?? '',
        usage?.outcome ?? '',
        usage?.inputTokens ?? 0,
        usage?.outputTokens ?? 0,
        usage?.cacheCreationTokens ?? 0,
        usage?.cacheReadTokens ?? 0,
        usage?.price ?? 0,
      ],
      'billing_settle_response',
    );
    const [row] = rows;
    if (!row) return this.chargeState(responseId);
    const outcome = usage ? 'completed' : 'failed';
    metrics.tasksFinished.inc({ kind: 'response', model: row.model, outcome, reason: usage ? 'none' : 'no_usage' });
    metrics.refunds.inc({ kind: 'response' });
    metrics.refundedCredits.inc({ kind: 'response' }, num(row.amount) - Math.min(usage?.price ?? 0, num(row.amount)));
    return 'moved';
  }

  /** Where a task's charge stands, or 'missing' when it was never charged. */
  async chargeState(taskId: string): Promise<ChargeState | 'missing'> {
    const [row] = await this.db.query<{ state: ChargeState }>('select state from billed_tasks where task_id = $1', [taskId]);
    return row?.state ?? 'missing';
  }

  /**
   * One edge: the statement moves the charge from the edge's states (and returns the task it
   * moved, when it selects kind, model and amount), or the state found is read.
   */
  private async move(taskId: string, edge: ChargeEdge, sql: string, extra: readonly unknown[]): Promise<{ outcome: EdgeOutcome; task?: MovedTask }> {
    const moved = await this.db.query<Partial<MovedTask>>(sql, [taskId, CHARGE_EDGES[edge].from, ...extra], `billing_edge_${edge}`);
    const [row] = moved;
    if (!row) return { outcome: await this.chargeState(taskId) };
    return {
      outcome: 'moved',
      task: row.kind && row.model !== undefined && row.amount !== undefined ? { kind: row.kind, model: row.model, amount: row.amount } : undefined,
    };
  }

  /**
   * The whole gateway's tasks and text requests in flight and the credits held, for the
   * metrics' gauges: one scan of the keys (their counters), read at scrape time only.
   */
  async inFlightFigures(): Promise<StoreFigures> {
    const [row] = await this.db.query<{ tasks: string | number | null; texts: string | number | null; held: string | number | null }>(
      'select sum(tasks_in_flight) as tasks, sum(text_in_flight) as texts, sum(held) as held from api_keys',
      [],
    );
    return { tasksInFlight: num(row?.tasks ?? 0), textInFlight: num(row?.texts ?? 0), heldCredits: num(row?.held ?? 0) };
  }

  /**
   * Unsettled charges the reconciler should look at now: older than `olderThanSeconds` (no
   * start can still be in flight) and due (never looked at, or their next look has come),
   * the longest overdue first so that no charge waits behind others.
   */
  async chargesDueForCheck(olderThanSeconds: number, limit = 500): Promise<{ taskId: string; keyId: string; kind: BilledTaskKind }[]> {
    const rows = await this.db.query<{ task_id: string; key_id: string; kind: BilledTaskKind }>(
      `select task_id, key_id, kind from billed_tasks
       where state = any($3::text[]) and created_at < now() - ($1::int * interval '1 second')
         and (next_check_at is null or next_check_at <= now())
       order by coalesce(next_check_at, created_at) limit $2`,
      [olderThanSeconds, limit, LIVE_CHARGE_STATES],
    );
    return rows.map((r) => ({ taskId: r.task_id, keyId: r.key_id, kind: r.kind }));
  }

  /** Started tasks (the API saw their workflow start): the reconciler's first look waits `seconds`. */
  async deferFirstCheck(taskIds: readonly string[], seconds: number): Promise<void> {
    if (taskIds.length === 0) return;
    await this.db.query(
      `update billed_tasks set next_check_at = now() + ($2::int * interval '1 second')
       where task_id = any($1::text[]) and state = any($3::text[]) and next_check_at is null`,
      [taskIds, seconds, LIVE_CHARGE_STATES],
    );
  }

  /**
   * Tasks the reconciler found still running: looked at again after as long as they have lived
   * (at least a minute, at most an hour), so a long task costs a few reads over its life.
   */
  async checkAgainLater(taskIds: readonly string[]): Promise<void> {
    if (taskIds.length === 0) return;
    await this.db.query(
      `update billed_tasks
       set next_check_at = now() + least(greatest(now() - created_at, interval '1 minute'), interval '1 hour')
       where task_id = any($1::text[]) and state = any($2::text[])`,
      [taskIds, LIVE_CHARGE_STATES],
    );
  }

  /**
   * Adds (or with a negative delta removes) credits of a limited key. A removal never takes
   * the balance below what text requests in flight hold. The new balance; throws UnknownKey,
   * UnlimitedKey or InsufficientBalance.
   */
  async grant(keyId: string, delta: number, reason: string, ref: string): Promise<number> {
    return this.db.transaction(async (tx) => {
      const key = await lockKey(tx, keyId);
      if (!key.limited) throw new UnlimitedKey(`key ${keyId} is unlimited`);
      const available = num(key.balance) - num(key.held);
      if (available + delta < 0) throw new InsufficientBalance(available, -delta);
      return move(tx, keyId, 'grant', delta, ref, reason, null);
    });
  }

  /** The key's balance now and what text requests in flight hold of it, or null when there is no such key. */
  async balance(keyId: string): Promise<{ limited: boolean; balance: number; held: number } | null> {
    const [row] = await this.db.query<KeyBillingRow>('select limited, balance, held, max_concurrent_tasks from api_keys where id = $1', [keyId]);
    return row ? { limited: row.limited, balance: num(row.balance), held: num(row.held) } : null;
  }

  async view(keyId: string): Promise<BalanceView | null> {
    const [row] = await this.db.query<{
      limited: boolean;
      balance: string | number;
      granted: string | number;
      spent: string | number;
      in_flight: number;
      held: string | number;
      text_in_flight: number;
    }>(
      `select k.limited, k.balance, k.held, k.text_in_flight,
              (select coalesce(sum(amount), 0) from ledger_entries where key_id = k.id and kind = 'grant') as granted,
              ${SPENT_BY_KEY_K} as spent,
              k.tasks_in_flight as in_flight
       from api_keys k where k.id = $1`,
      [keyId],
    );
    if (!row) return null;
    return {
      balance: row.limited ? num(row.balance) : null,
      spent: num(row.spent),
      granted: num(row.granted),
      tasksInFlight: row.in_flight,
      held: num(row.held),
      textInFlight: row.text_in_flight,
    };
  }

  /**
   * Every key's balance (null when unlimited) and spending (charges + usage - refunds), by key
   * id, in one query: what the admin key list shows beside each key.
   */
  async balances(): Promise<Map<string, { balance: number | null; spent: number }>> {
    const rows = await this.db.query<{ id: string; limited: boolean; balance: string | number; spent: string | number }>(
      `select k.id, k.limited, k.balance, ${SPENT_BY_KEY_K} as spent from api_keys k`,
    );
    return new Map(rows.map((r) => [r.id, { balance: r.limited ? num(r.balance) : null, spent: num(r.spent) }]));
  }

  /** The key's ledger (entries and priced usage), newest first; `offset` pages back; `filter` narrows it. */
  async ledger(keyId: string, limit: number, offset = 0, filter: LedgerFilter = {}): Promise<LedgerEntryView[]> {
    const rows = await this.db.query<{
      id: string;
      kind: LedgerKind;
      amount: string | number;
      ref: string;
      reason: string;
      model: string | null;
      created_at: Date | string;
    }>(
      `select id, kind, amount, ref, reason, model, created_at from (
         select 'le_' || id as id, id as seq, kind, amount, ref, reason, model, created_at from ledger_entries where key_id = $1
         union all
         select id, 0 as seq, 'usage', -price, id, 'text usage, request ' || request_id, model, created_at from usage_records where key_id = $1 and price > 0
       ) e
       where ($4::text is null or kind = $4) and ($5::text is null or model = $5)
         and ($6::float8 is null or created_at >= to_timestamp($6::float8)) and ($7::float8 is null or created_at < to_timestamp($7::float8))
       order by created_at desc, seq desc, id desc limit $2 offset $3`,
      [keyId, limit, offset, filter.kind ?? null, filter.model ?? null, filter.since ?? null, filter.until ?? null],
    );
    return rows.map((r) => ({
      id: r.id,
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
  const [key] = await tx.query<KeyBillingRow>('select limited, balance, held, max_concurrent_tasks from api_keys where id = $1 for update', [keyId]);
  if (!key) throw new UnknownKey(`no key ${keyId}`);
  return key;
}

/** One ledger entry and the matching balance change; the balance after it. */
async function move(tx: Sql, keyId: string, kind: LedgerKind, amount: number, ref: string, reason: string, model: string | null): Promise<number> {
  const inserted = await tx.query(
    'insert into ledger_entries (key_id, kind, amount, ref, reason, model) values ($1, $2, $3, $4, $5, $6) on conflict (kind, ref) do nothing returning id',
    [keyId, kind, amount, ref, reason, model],
  );
  const [row] =
    inserted.length > 0
      ? await tx.query<{ balance: string | number }>('update api_keys set balance = balance + $2 where id = $1 returning balance', [keyId, amount])
      : await tx.query<{ balance: string | number }>('select balance from api_keys where id = $1', [keyId]);
  return num(row?.balance);
}
