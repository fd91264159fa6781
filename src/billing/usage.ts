import type { Logger } from 'pino';
import { textUsagePrice, type PriceTable } from './prices';
import type { TextUsage } from '../providers/usage';
import { metrics } from '../metrics/metrics';
import type { Db, Sql } from '../store/db';
import { z } from 'zod';
import type { JournalMark, OrphanLine, SettlementJournal } from './settlement-journal';
import type { TextLeases } from './text-leases';

/**
 * completed; aborted (the client left mid-answer); failed (the stream broke off or carried an
 * error); orphaned (the process holding the request died: billed at its hold, see TextHolds).
 */
export type UsageOutcome = 'completed' | 'aborted' | 'failed' | 'orphaned';

export interface UsageRecord extends TextUsage {
  requestId: string;
  keyId: string;
  model: string;
  channel: string;
  endpoint: 'messages' | 'chat' | 'responses';
  streamed: boolean;
  outcome: UsageOutcome;
}

export interface UsageTotals {
  model: string;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cache_creation_tokens: number;
  cache_read_tokens: number;
}

/** One usage record as the admin API shows it. */
export interface UsageRecordView {
  id: string;
  request_id: string;
  model: string;
  channel: string;
  endpoint: UsageRecord['endpoint'];
  streamed: boolean;
  outcome: UsageOutcome;
  input_tokens: number;
  output_tokens: number;
  cache_creation_tokens: number;
  cache_read_tokens: number;
  created_at: number;
}

/** The end of one text request: its hold, and the usage record to bill (null when no answer was produced). */
export interface TextSettlement {
  holdId: string;
  keyId: string;
  usage: UsageRecord | null;
}

interface Pending {
  settlement: TextSettlement;
  /** The usage record's id, fixed once so a retried write cannot bill it twice. */
  id: string;
  price: number;
  /**
   * Held from a lease (TextLeases): the process whose lease, what the answer consumed of it,
   * and the hold's line in the journal. Null: the hold is a text_holds row (TextHolds).
   */
  lease: { owner: string; consumed: number; holdMark: JournalMark | null } | null;
  /** Where the journal holds it (deleted once committed); null when the journal could not take it. */
  mark: JournalMark | null;
  /** Set when the caller waits for the store's commit itself (the journal could not take it). */
  resolve: (() => void) | null;
}

const endpoint = z.enum(['messages', 'chat', 'responses']);

/** A settlement as the journal keeps it (JSON, one line each); `consumed` when its hold was leased. */
const journalEntry = z.object({
  holdId: z.string().min(1),
  keyId: z.string().min(1),
  id: z.string().min(1),
  price: z.number().finite(),
  consumed: z.number().finite().nonnegative().optional(),
  usage: z
    .object({
      requestId: z.string(),
      keyId: z.string(),
      model: z.string(),
      channel: z.string(),
      endpoint,
      streamed: z.boolean(),
      outcome: z.enum(['completed', 'aborted', 'failed', 'orphaned']),
      inputTokens: z.number().int().nonnegative(),
      outputTokens: z.number().int().nonnegative(),
      cacheCreationTokens: z.number().int().nonnegative(),
      cacheReadTokens: z.number().int().nonnegative(),
    })
    .nullable(),
});

/** A hold taken from a lease, as the journal keeps it (TextLeases). */
const journalHold = z.object({
  hold: z.string().min(1),
  keyId: z.string().min(1),
  amount: z.number().finite().nonnegative(),
  requestId: z.string(),
  model: z.string(),
  endpoint,
  streamed: z.boolean(),
});

/** Settlements per statement at most. */
const MAX_BATCH = 500;
/** A write that failed is tried again after this long (the store is away: no point hammering it). */
const RETRY_MS = 1000;

/**
 * Text usage, one row per answered request, keyed by an id derived from its hold (never the
 * caller's request id, which a caller could repeat). Each record carries its price and is the
 * usage entry of the key's ledger; it is written in the transaction that settles the request's
 * hold (TextHolds), so usage, its charge and the hold's release are never apart.
 *
 * A settlement is durable before its answer ends, but not in the store: it is appended to the
 * process's SettlementJournal (a local fdatasync, group-committed), and the store gets the
 * settlements of `flushMs` in one statement. So an answer waits for a fraction of a millisecond
 * of local disk, not for the store, and the store runs one statement per batch instead of one
 * per request. A kill -9 after an answer loses nothing: the process that finds this one dead
 * (the next start on an embedded store; any API process on the same data folder once its
 * heartbeat is old) writes what its journal holds before settling its holds (recover). Until a batch is written the key's hold stays on its
 * row, so what the key can spend is briefly lower than it will be, never higher; a refusal that
 * this process's pending settlements may have caused is decided again after they are written
 * (afterSettled). When the journal cannot take a settlement (a disk error), the answer waits for
 * the store's commit instead, as a journal-less recorder would.
 */
export class UsageRecorder {
  private queue: Pending[] = [];
  private writing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** Settlements being appended to the journal, not yet queued. */
  private journaling = new Set<Promise<unknown>>();
  /** Per key, settlements queued or being written. */
  private readonly pendingByKey = new Map<string, number>();

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly prices: PriceTable,
    private readonly options: {
      /** null: every answer waits for the store's commit. */
      journal: SettlementJournal | null;
      /** How long a settlement waits to share the store's next statement. */
      flushMs: number;
      /** Where holds are leased (the embedded store); null: every hold is a text_holds row. */
      leases?: TextLeases | null;
      /** This process's id in gateway_instances: whose leases its settlements consume. */
      owner?: string;
    } = { journal: null, flushMs: 0 },
  ) {}

  /** The credits a usage record costs; 0 (and said loudly) when its token counts cannot be priced. */
  priceOf(r: UsageRecord): number {
    try {
      return textUsagePrice(this.prices, r.model, r);
    } catch (err) {
      // Token counts the mapping let through malformed: recorded as reported, left unpriced and said loudly.
      this.logger.error({ err: (err as Error).message, model: r.model, requestId: r.requestId }, 'text usage could not be priced');
      return 0;
    }
  }

  /**
   * Settles a request's hold, billing its usage; resolves once that is durable (in the journal,
   * or else in the store). A store write that fails is retried in the background for as long as
   * the process runs, so a caller that must not wait long races this against its own deadline.
   */
  settle(settlement: TextSettlement): Promise<void> {
    const usage = settlement.usage;
    const price = usage ? this.priceOf(usage) : 0;
    const leased = this.options.leases?.release(settlement.holdId, price) ?? null;
    const pending: Pending = {
      settlement,
      id: usageRecordId(settlement.holdId),
      price,
      lease: leased && { owner: this.options.owner ?? '', consumed: leased.consumed, holdMark: leased.hold.mark },
      mark: null,
      resolve: null,
    };
    const journal = this.options.journal;
    if (!journal) return this.enqueueAwaited(pending);
    const line = JSON.stringify({
      holdId: settlement.holdId,
      keyId: settlement.keyId,
      id: pending.id,
      price,
      ...(leased && { consumed: leased.consumed }),
      usage,
    });
    const appended = journal.append(line).then(
      (mark) => {
        pending.mark = mark;
        // A leased hold whose request produced no answer has nothing for the store: its lease
        // took it back already, and the journal forgets both lines.
        if (pending.lease && !usage) this.forget(pending);
        else this.enqueue(pending, this.options.flushMs);
      },
      (err: unknown) => {
        this.logger.error({ err: (err as Error).message }, 'text usage journal append failed; the answer waits for the store');
        if (pending.lease && !usage) return this.forget(pending);
        return this.enqueueAwaited(pending);
      },
    );
    this.journaling.add(appended);
    return appended.finally(() => this.journaling.delete(appended));
  }

  /**
   * Runs `attempt`, a decision on what the key may spend (a hold, a charge); when it is refused
   * with `refused(err)` while settlements of the key are still on their way to the store (their
   * holds counted, their release not yet), they are written first and the decision taken again.
   */
  async afterSettled<T>(keyId: string, attempt: () => Promise<T>, refused: (err: unknown) => boolean): Promise<T> {
    try {
      return await attempt();
    } catch (err) {
      if (!refused(err) || !(this.pendingByKey.has(keyId) || this.options.leases?.hasLease(keyId))) throw err;
      await this.flush(keyId);
      return attempt();
    }
  }

  /** Answered requests whose usage is not in the store yet (being journaled, queued or written). */
  pending(): number {
    let n = this.journaling.size;
    for (const count of this.pendingByKey.values()) n += count;
    return n;
  }

  /**
   * Resolves once everything settled so far is in the store and, given a key, what this process
   * leased of it and does not use is given back: a view of the key's money reads after it, and
   * a refused spender of the key tries again after it.
   */
  async flush(keyId?: string): Promise<void> {
    for (;;) {
      if (this.writing) await this.writing;
      else if (this.queue.length > 0) this.writeNow();
      else break;
    }
    if (keyId !== undefined) await this.options.leases?.giveBackUnused(keyId);
  }

  /**
   * Writes what the journals of processes that are gone hold (a kill -9 between an answer and
   * its batch): every owner but this process and those `live()` names. TextHolds runs it before
   * it declares any hold orphaned, so those holds are billed at their real price, not in full.
   */
  async recover(live: () => Promise<ReadonlySet<string>>): Promise<number> {
    if (!this.options.journal) return 0;
    const { lines, remove } = await this.options.journal.orphans(live);
    const { entries, unanswered } = journaledSettlements(lines, (err) =>
      this.logger.error({ err: (err as Error).message }, 'unreadable text usage journal entry left out'),
    );
    for (let i = 0; i < entries.length; i += MAX_BATCH) await this.write(entries.slice(i, i + MAX_BATCH));
    remove();
    if (entries.length > 0) {
      this.logger.info(
        { settlements: entries.length - unanswered, unanswered },
        'text usage written from the journal of a stopped process (requests it had not answered: in full)',
      );
    }
    return entries.length;
  }

  /** A leased hold with nothing for the store: both its lines are done with. */
  private forget(pending: Pending): void {
    const journal = this.options.journal;
    const holdMark = pending.lease?.holdMark;
    if (!journal || !holdMark) return;
    journal.committed([holdMark]);
    if (pending.mark) journal.committedAfter(pending.mark, holdMark);
  }

  private enqueueAwaited(pending: Pending): Promise<void> {
    return new Promise((resolve) => {
      pending.resolve = resolve;
      this.enqueue(pending, 0);
    });
  }

  private enqueue(pending: Pending, delayMs: number): void {
    this.queue.push(pending);
    const keyId = pending.settlement.keyId;
    this.pendingByKey.set(keyId, (this.pendingByKey.get(keyId) ?? 0) + 1);
    this.schedule(delayMs);
  }

  /** A write in delayMs, unless one is due sooner or under way (it schedules the next as it ends). */
  private schedule(delayMs: number): void {
    if (this.writing) return;
    if (this.timer && delayMs > 0) return;
    if (this.timer) clearTimeout(this.timer);
    // Not what keeps a process up: close() writes what is queued.
    this.timer = setTimeout(() => this.writeNow(), delayMs).unref();
  }

  private writeNow(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.writing || this.queue.length === 0) return;
    this.writing = this.drain().finally(() => {
      this.writing = null;
      if (this.queue.length > 0) this.schedule(this.queue.some((p) => p.resolve) ? 0 : this.options.flushMs);
    });
  }

  /** Writes one batch, retrying until the store takes it. */
  private async drain(): Promise<void> {
    const batch = this.queue.splice(0, MAX_BATCH);
    for (;;) {
      try {
        await this.write(batch);
        break;
      } catch (err) {
        this.logger.error({ err: (err as Error).message, settlements: batch.length }, 'text usage write failed; will retry');
        // Unref'd like the flush timer: a store that is gone must not keep a stopping process up
        // (close() gives up after its timeout; the journal keeps what was not written).
        await new Promise((r) => setTimeout(r, RETRY_MS).unref());
      }
    }
    const marks: JournalMark[] = [];
    for (const p of batch) {
      const keyId = p.settlement.keyId;
      const left = (this.pendingByKey.get(keyId) ?? 1) - 1;
      if (left > 0) this.pendingByKey.set(keyId, left);
      else this.pendingByKey.delete(keyId);
      if (p.lease) this.forget(p);
      else if (p.mark) marks.push(p.mark);
      p.resolve?.();
    }
    this.options.journal?.committed(marks);
  }

  /**
   * Writes a batch: the settlements of leased holds (TextLeases) and those of text_holds rows,
   * each kind in one statement, which is one transaction. Both are idempotent: a settlement
   * written before (by a write whose commit was not acknowledged, by a recovery, or by the
   * orphan sweep) is not billed again. The embedded store has one connection, so nothing can
   * interleave; on PostgreSQL the keys are locked first, in id order, as every multi-key writer
   * locks them, so two replicas' batches cannot deadlock.
   */
  private async write(batch: readonly Pending[]): Promise<void> {
    const written = new Set<string>();
    for (const [part, settle] of [
      [batch.filter((p) => p.lease), settleLeased],
      [batch.filter((p) => !p.lease), settleHeldRows],
    ] as const) {
      if (part.length === 0) continue;
      const keys = [...new Set(part.map((p) => p.settlement.keyId))].sort();
      const ids =
        this.db.kind === 'embedded'
          ? await settle(this.db, part)
          : await this.db.transaction(async (tx) => {
              await tx.query('select id from api_keys where id = any($1::text[]) order by id for update', [keys]);
              return settle(tx, part);
            });
      for (const id of ids) written.add(id);
    }
    // Counted once the commit is in, and only for what this write billed.
    for (const p of batch) {
      if (!p.settlement.usage || !written.has(p.settlement.holdId)) continue;
      metrics.charges.inc({ kind: 'text' });
      metrics.chargedCredits.inc({ kind: 'text' }, p.price);
    }
  }

  async totals(keyId: string): Promise<UsageTotals[]> {
    await this.flush(keyId);
    const rows = await this.db.query<Record<string, string | number>>(
      `select model, count(*) as requests, sum(input_tokens) as input_tokens, sum(output_tokens) as output_tokens,
              sum(cache_creation_tokens) as cache_creation_tokens, sum(cache_read_tokens) as cache_read_tokens
       from usage_records where key_id = $1 group by model order by model`,
      [keyId],
    );
    return rows.map((r) => ({
      model: String(r.model),
      requests: Number(r.requests),
      input_tokens: Number(r.input_tokens),
      output_tokens: Number(r.output_tokens),
      cache_creation_tokens: Number(r.cache_creation_tokens),
      cache_read_tokens: Number(r.cache_read_tokens),
    }));
  }

  async recent(keyId: string, limit: number): Promise<UsageRecordView[]> {
    await this.flush(keyId);
    const rows = await this.db.query<Omit<UsageRecordView, 'created_at'> & { created_at: Date | string }>(
      `select id, request_id, model, channel, endpoint, streamed, outcome, input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, created_at
       from usage_records where key_id = $1 order by created_at desc, id limit $2`,
      [keyId, limit],
    );
    // bigint columns arrive as strings from PostgreSQL.
    return rows.map((r) => ({
      ...r,
      input_tokens: Number(r.input_tokens),
      output_tokens: Number(r.output_tokens),
      cache_creation_tokens: Number(r.cache_creation_tokens),
      cache_read_tokens: Number(r.cache_read_tokens),
      created_at: Math.floor(new Date(r.created_at).getTime() / 1000),
    }));
  }

  /**
   * Writes what is settled so far, waiting at most `timeoutMs` for a store that is away; what
   * it could not write stays in the journal for the next start.
   */
  async close(timeoutMs = 10_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const everything = (async () => {
      while (this.journaling.size > 0) await Promise.allSettled([...this.journaling]);
      await this.flush();
      await this.options.leases?.giveBackUnused();
    })();
    await Promise.race([everything, new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
    await this.options.journal?.close();
  }
}

/** The usage record of a hold: its id derives from the hold's, never from what a caller sent. */
function usageRecordId(holdId: string): string {
  return `use_${holdId.replace(/^hold_/, '')}`;
}

/** The usage record's columns of a batch, as unnest() takes them ($1..$13, after `first` more). */
function usageColumns(batch: readonly Pending[]): unknown[] {
  const col = <T>(f: (u: UsageRecord | null, p: Pending) => T): T[] => batch.map((p) => f(p.settlement.usage, p));
  return [
    col((_u, p) => p.id),
    col((u) => u?.requestId ?? ''),
    col((_u, p) => p.settlement.keyId),
    col((u) => u?.model ?? ''),
    col((u) => u?.channel ?? ''),
    col((u) => u?.endpoint ?? ''),
    col((u) => u?.streamed ?? false),
    col((u) => u?.outcome ?? ''),
    col((u) => u?.inputTokens ?? 0),
    col((u) => u?.outputTokens ?? 0),
    col((u) => u?.cacheCreationTokens ?? 0),
    col((u) => u?.cacheReadTokens ?? 0),
    col((_u, p) => p.price),
  ];
}

const USAGE_INPUT = `$1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::boolean[], $8::text[],
                     $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[]`;
const USAGE_COLUMNS = `id, request_id, key_id, model, channel, endpoint, streamed, outcome,
                       input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, price`;

/**
 * Settlements of leased holds, all billed: their usage records are written, and for those new,
 * each key's balance moves by the price and its lease (text_leases, and held with it) by what
 * the answer consumed. A lease left with nothing is deleted. Resolves with the holds billed.
 */
async function settleLeased(sql: Sql, batch: readonly Pending[]): Promise<string[]> {
  const rows = await sql.query<{ hold_id: string }>(
    `with input as (
       select * from unnest(${USAGE_INPUT}, $14::text[], $15::text[], $16::bigint[])
         as i(${USAGE_COLUMNS}, hold_id, instance_id, consumed)
     ), recorded as (
       insert into usage_records (${USAGE_COLUMNS}) select ${USAGE_COLUMNS} from input
       on conflict (id) do nothing returning id
     ), applied as (
       select i.* from input i join recorded r using (id)
     ), per_lease as (
       select instance_id, key_id, sum(consumed) as consumed from applied group by instance_id, key_id
     ), shrunk as (
       update text_leases l set amount = l.amount - p.consumed from per_lease p
       where l.instance_id = p.instance_id and l.key_id = p.key_id and (l.amount <> p.consumed or l.slots <> 0) returning l.key_id
     ), gone as (
       delete from text_leases l using per_lease p
       where l.instance_id = p.instance_id and l.key_id = p.key_id and l.amount = p.consumed and l.slots = 0 returning l.key_id
     ), per_key as (
       select key_id, sum(price) as price, sum(consumed) as consumed from applied group by key_id
     ), moved as (
       update api_keys k set balance = k.balance - p.price, held = k.held - p.consumed from per_key p where k.id = p.key_id returning k.id
     )
     select hold_id from applied`,
    [...usageColumns(batch), batch.map((p) => p.settlement.holdId), batch.map((p) => p.lease?.owner ?? ''), batch.map((p) => p.lease?.consumed ?? 0)],
    'text_settle_leased',
  );
  return rows.map((r) => r.hold_id);
}

/**
 * Settlements of text_holds rows: the holds are deleted (one already gone was settled before
 * and is not billed again), the usage records of the deleted ones written, and each key's held,
 * text in flight and balance move once. Resolves with the holds deleted.
 */
async function settleHeldRows(sql: Sql, batch: readonly Pending[]): Promise<string[]> {
  const rows = await sql.query<{ id: string }>(
    `with input as (
       select * from unnest(${USAGE_INPUT}, $14::text[], $15::boolean[])
         as i(${USAGE_COLUMNS}, hold_id, billed)
     ), released as (
       delete from text_holds h using input i where h.id = i.hold_id returning h.id, h.key_id, h.amount
     ), recorded as (
       insert into usage_records (${USAGE_COLUMNS})
       select ${USAGE_COLUMNS} from input where billed and hold_id in (select id from released)
       on conflict (id) do nothing returning id
     ), per_key as (
       select r.key_id, sum(r.amount) as held, count(*) as n, coalesce(sum(i.price) filter (where i.billed), 0) as price
       from released r join input i on i.hold_id = r.id group by r.key_id
     ), moved as (
       update api_keys k set held = k.held - p.held, text_in_flight = k.text_in_flight - p.n, balance = k.balance - p.price
       from per_key p where k.id = p.key_id returning k.id
     )
     select id from released`,
    [...usageColumns(batch), batch.map((p) => p.settlement.holdId), batch.map((p) => p.settlement.usage !== null)],
    'text_settle_batch',
  );
  return rows.map((r) => r.id);
}

/**
 * What a stopped process's journal lines bill: each settlement as it was settled, and each
 * leased hold with no settlement (its answer never ended: what the provider produced is
 * unknown, and the hold is its upper bound) in full, as an `orphaned` record. A leased hold
 * settled with no answer bills nothing. Lines come oldest first, a hold's before its settlement.
 */
export function journaledSettlements(lines: readonly OrphanLine[], unreadable: (err: unknown) => void): { entries: Pending[]; unanswered: number } {
  const holds = new Map<string, { owner: string; hold: z.infer<typeof journalHold> }>();
  const entries: Pending[] = [];
  for (const { owner, line } of lines) {
    try {
      const json: unknown = JSON.parse(line);
      if (typeof json === 'object' && json !== null && 'hold' in json) {
        const hold = journalHold.parse(json);
        holds.set(hold.hold, { owner, hold });
        continue;
      }
      const parsed = journalEntry.parse(json);
      holds.delete(parsed.holdId);
      // A leased hold's request that produced no answer: its lease took it back.
      if (parsed.consumed !== undefined && parsed.usage === null) continue;
      entries.push({
        settlement: { holdId: parsed.holdId, keyId: parsed.keyId, usage: parsed.usage },
        id: parsed.id,
        price: parsed.price,
        lease: parsed.consumed === undefined ? null : { owner, consumed: parsed.consumed, holdMark: null },
        mark: null,
        resolve: null,
      });
    } catch (err) {
      unreadable(err);
    }
  }
  for (const { owner, hold } of holds.values()) {
    entries.push({
      settlement: {
        holdId: hold.hold,
        keyId: hold.keyId,
        usage: {
          requestId: hold.requestId,
          keyId: hold.keyId,
          model: hold.model,
          channel: '',
          endpoint: hold.endpoint,
          streamed: hold.streamed,
          outcome: 'orphaned',
          inputTokens: 0,
          outputTokens: 0,
          cacheCreationTokens: 0,
          cacheReadTokens: 0,
        },
      },
      id: usageRecordId(hold.hold),
      price: hold.amount,
      lease: { owner, consumed: hold.amount, holdMark: null },
      mark: null,
      resolve: null,
    });
  }
  return { entries, unanswered: holds.size };
}
