import type { Logger } from 'pino';
import { textUsagePrice, type PriceTable } from './prices';
import type { TextUsage } from '../providers/usage';
import { metrics } from '../metrics/metrics';
import type { Db, Sql } from '../store/db';

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
  resolve: () => void;
}

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
 * Writes are group commits: a settlement arriving while no write runs is written at once; those
 * arriving during a write go together as the next one. The route waits for its settlement
 * before it ends the answer (bounded: see settle), so a kill -9 after an answer cannot lose its
 * usage; a write that fails is retried until it succeeds, and a process that dies first leaves
 * its hold to be settled in full by another (TextHolds.settleOrphans).
 */
export class UsageRecorder {
  private queue: Pending[] = [];
  private writing: Promise<void> | null = null;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly prices: PriceTable,
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
   * Settles a request's hold, billing its usage; resolves once that is committed. A write that
   * fails is retried in the background for as long as the process runs, so a caller that must
   * not wait long races this against its own deadline.
   */
  settle(settlement: TextSettlement): Promise<void> {
    return new Promise((resolve) => {
      const usage = settlement.usage;
      this.queue.push({ settlement, id: `use_${settlement.holdId.replace(/^hold_/, '')}`, price: usage ? this.priceOf(usage) : 0, resolve });
      this.writing ??= this.drain();
    });
  }

  /** Resolves once everything settled so far is written (the admin views read after it). */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        // One turn of the event loop first, so settlements arriving meanwhile join the batch
        // (the embedded store runs a statement synchronously: nothing arrives during one).
        await new Promise((resolve) => setImmediate(resolve));
        const batch = this.queue.splice(0, MAX_BATCH);
        try {
          await this.write(batch);
          for (const p of batch) p.resolve();
        } catch (err) {
          this.logger.error({ err: (err as Error).message, settlements: batch.length }, 'text usage write failed; will retry');
          this.queue.unshift(...batch);
          await new Promise((r) => setTimeout(r, RETRY_MS));
        }
      }
    } finally {
      this.writing = null;
    }
  }

  /**
   * One transaction: the holds are deleted (a hold already gone was settled before, by a write
   * whose commit was not acknowledged or by the orphan sweep, and is not billed again), the
   * usage records of the deleted ones are written, and each key's held, text in flight and
   * balance move once.
   */
  private async write(batch: readonly Pending[]): Promise<void> {
    const keys = [...new Set(batch.map((p) => p.settlement.keyId))].sort();
    const col = <T>(f: (p: Pending, u: UsageRecord | null) => T): T[] => batch.map((p) => f(p, p.settlement.usage));
    const settle = (sql: Sql) =>
      sql.query<{ id: string }>(
        `with input as (
           select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::boolean[], $9::text[],
                                $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[], $15::boolean[])
             as i(hold_id, id, request_id, key_id, model, channel, endpoint, streamed, outcome,
                  input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, price, billed)
         ), released as (
           delete from text_holds h using input i where h.id = i.hold_id returning h.id, h.key_id, h.amount
         ), recorded as (
           insert into usage_records (id, request_id, key_id, model, channel, endpoint, streamed, outcome,
                                      input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, price)
           select i.id, i.request_id, i.key_id, i.model, i.channel, i.endpoint, i.streamed, i.outcome,
                  i.input_tokens, i.output_tokens, i.cache_creation_tokens, i.cache_read_tokens, i.price
           from input i join released r on r.id = i.hold_id where i.billed
           on conflict (id) do nothing returning id
         ), per_key as (
           select r.key_id, sum(r.amount) as held, count(*) as n, coalesce(sum(i.price) filter (where i.billed), 0) as price
           from released r join input i on i.hold_id = r.id group by r.key_id
         ), moved as (
           update api_keys k set held = k.held - p.held, text_in_flight = k.text_in_flight - p.n, balance = k.balance - p.price
           from per_key p where k.id = p.key_id returning k.id
         )
         select id from released`,
        [
          col((p) => p.settlement.holdId),
          col((p) => p.id),
          col((_p, u) => u?.requestId ?? ''),
          col((p) => p.settlement.keyId),
          col((_p, u) => u?.model ?? ''),
          col((_p, u) => u?.channel ?? ''),
          col((_p, u) => u?.endpoint ?? ''),
          col((_p, u) => u?.streamed ?? false),
          col((_p, u) => u?.outcome ?? ''),
          col((_p, u) => u?.inputTokens ?? 0),
          col((_p, u) => u?.outputTokens ?? 0),
          col((_p, u) => u?.cacheCreationTokens ?? 0),
          col((_p, u) => u?.cacheReadTokens ?? 0),
          col((p) => p.price),
          col((_p, u) => u !== null),
        ],
        'text_settle_batch',
      );
    // One statement is one transaction. The embedded store has one connection, so nothing can
    // interleave; on PostgreSQL the keys are locked first, in id order, as every multi-key writer
    // locks them, so two replicas' batches cannot deadlock.
    const released =
      this.db.kind === 'embedded'
        ? await settle(this.db)
        : await this.db.transaction(async (tx) => {
            await tx.query('select id from api_keys where id = any($1::text[]) order by id for update', [keys]);
            return settle(tx);
          });
    // Counted once the commit is in, and only for the holds this write settled (a hold settled
    // before, by an unacknowledged write or the orphan sweep, was counted then or by the sweep).
    const settledNow = new Set(released.map((r) => r.id));
    for (const p of batch) {
      if (!p.settlement.usage || !settledNow.has(p.settlement.holdId)) continue;
      metrics.charges.inc({ kind: 'text' });
      metrics.chargedCredits.inc({ kind: 'text' }, p.price);
    }
  }

  async totals(keyId: string): Promise<UsageTotals[]> {
    await this.flush();
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
    await this.flush();
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

  /** Writes what is settled so far, waiting at most `timeoutMs` for a store that is away. */
  async close(timeoutMs = 10_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.flush(), new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
  }
}
