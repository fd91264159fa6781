import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { textUsagePrice, type PriceTable } from '../catalog/prices';
import type { TextUsage } from '../upstreams/usage';
import type { BillingStore } from './billing';
import type { Db } from './db';

export type UsageOutcome = 'completed' | 'aborted' | 'failed';

export interface UsageRecord extends TextUsage {
  requestId: string;
  keyId: string;
  model: string;
  channel: string;
  endpoint: 'messages' | 'chat';
  streamed: boolean;
  /** completed; aborted (the client left mid-stream); failed (the stream broke off or carried an error). */
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

const COLUMNS = 13;
/** PostgreSQL takes at most 65535 parameters per statement. */
const MAX_BATCH = Math.floor(65_535 / COLUMNS);

/** `retried`: a write of it failed once, so it may have been committed after all. */
type QueuedUsage = UsageRecord & { id: string; price: number; retried?: boolean };

/**
 * Text usage, one row per answered request, keyed by a gateway-made id (never the caller's
 * request id, which a caller could repeat). Rows are written in batches every USAGE_FLUSH_MS
 * so the hot path never waits on the database; close() writes what is left. Each record
 * carries its price and is the usage entry of the key's ledger; the batch's balance updates
 * are in the same transaction, so usage and its charge are never apart.
 */
export class UsageRecorder {
  private queue: QueuedUsage[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  /** Credits recorded but not yet written, per key: what a balance check must subtract. */
  private readonly pending = new Map<string, number>();
  private readonly billedListeners: ((keyId: string, amount: number) => void)[] = [];

  constructor(
    private readonly db: Db,
    private readonly flushMs: number,
    private readonly logger: Logger,
    private readonly billing: BillingStore,
    private readonly prices: PriceTable,
  ) {}

  record(r: UsageRecord): void {
    let price = 0;
    try {
      price = textUsagePrice(this.prices, r.model, r);
    } catch (err) {
      // Token counts the mapping let through malformed: recorded as reported, left unpriced and said loudly.
      this.logger.error({ err: (err as Error).message, model: r.model, requestId: r.requestId }, 'text usage could not be priced');
    }
    this.queue.push({ ...r, id: `use_${randomUUID().replace(/-/g, '')}`, price });
    if (price > 0) this.pending.set(r.keyId, (this.pending.get(r.keyId) ?? 0) + price);
    this.timer ??= setTimeout(() => void this.flush(), this.flushMs);
  }

  /** Called with each key's usage once it is written (so a cached balance can follow). */
  onBilled(listener: (keyId: string, amount: number) => void): void {
    this.billedListeners.push(listener);
  }

  /** Credits of this key's usage recorded in this process and not yet in the ledger. */
  pendingFor(keyId: string): number {
    return this.pending.get(keyId) ?? 0;
  }

  /** Writes everything queued so far; resolves once it is in the database. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.queue;
    this.queue = [];
    this.flushing = this.flushing.then(() => this.write(batch));
    return this.flushing;
  }

  private async write(batch: QueuedUsage[]): Promise<void> {
    for (let i = 0; i < batch.length; i += MAX_BATCH) {
      const rows = batch.slice(i, i + MAX_BATCH);
      const params: unknown[] = [];
      const tuples = rows.map((r) => {
        params.push(r.id, r.requestId, r.keyId, r.model, r.channel, r.endpoint, r.streamed, r.outcome, r.inputTokens, r.outputTokens, r.cacheCreationTokens, r.cacheReadTokens, r.price);
        const base = params.length - COLUMNS;
        return `(${Array.from({ length: COLUMNS }, (_, k) => `$${base + k + 1}`).join(',')})`;
      });
      try {
        await this.db.transaction(async (tx) => {
          // A record already written (a batch retried after an ambiguous commit) is not billed
          // twice: a retried batch bills only the rows this insert wrote. A first attempt
          // cannot conflict (fresh ids) and skips reading rows back, on the hottest write path.
          const insert = `insert into usage_records (id, request_id, key_id, model, channel, endpoint, streamed, outcome, input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, price)
             values ${tuples.join(',')} on conflict (id) do nothing`;
          if (rows.some((r) => r.retried)) {
            const written = await tx.query<{ key_id: string; price: string | number }>(`${insert} returning key_id, price`, params);
            await this.billing.billUsage(tx, written.map((r) => ({ keyId: r.key_id, amount: Number(r.price) })));
          } else {
            await tx.query(insert, params);
            await this.billing.billUsage(tx, rows.map((r) => ({ keyId: r.keyId, amount: r.price })));
          }
        });
        for (const r of rows) {
          if (r.price === 0) continue;
          const left = (this.pending.get(r.keyId) ?? 0) - r.price;
          if (left > 0) this.pending.set(r.keyId, left);
          else this.pending.delete(r.keyId);
          for (const listener of this.billedListeners) listener(r.keyId, r.price);
        }
      } catch (err) {
        // Put them back for the next flush rather than lose them.
        this.logger.error({ err: (err as Error).message, rows: rows.length }, 'usage write failed; will retry');
        this.queue.unshift(...rows.map((r) => ({ ...r, retried: true })));
        this.timer ??= setTimeout(() => void this.flush(), Math.max(this.flushMs, 1000));
      }
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

  async close(): Promise<void> {
    await this.flush();
  }
}
