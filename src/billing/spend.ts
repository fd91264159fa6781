import type { Db } from '../store/db';
import { num } from './ledger';

export type SpendGranularity = 'day' | 'hour';

export const BUCKET_SECONDS: Readonly<Record<SpendGranularity, number>> = { day: 86_400, hour: 3600 };

/** One model's spending in one UTC bucket. */
export interface SpendBucket {
  /** The bucket's start, unix seconds (UTC midnight or the top of the hour). */
  start: number;
  model: string;
  /** Credits: charges + usage − refunds. */
  spent: number;
  /** Ledger entries (charges, refunds, priced usage records) in it. */
  count: number;
}

/** The start of the UTC bucket holding `unix` (seconds). */
export const bucketStart = (unix: number, granularity: SpendGranularity): number =>
  unix - (((unix % BUCKET_SECONDS[granularity]) + BUCKET_SECONDS[granularity]) % BUCKET_SECONDS[granularity]);

/**
 * A key's spending by model and UTC bucket over [since, until): task charges net of their
 * refunds, plus priced text usage (usage records, which are their own ledger entries). Summed
 * in the store, one row per (bucket, model), oldest first. Entries without a model (none are
 * written today) are under "unknown".
 */
export async function spendByBucket(db: Db, keyId: string, granularity: SpendGranularity, since: number, until: number): Promise<SpendBucket[]> {
  const width = BUCKET_SECONDS[granularity];
  const rows = await db.query<{ start: string | number; model: string; spent: string | number; count: string | number }>(
    `select start, model, sum(spent) as spent, sum(n) as count from (
       select floor(extract(epoch from created_at) / $4) * $4 as start, coalesce(model, 'unknown') as model, -sum(amount) as spent, count(*) as n
       from ledger_entries
       where key_id = $1 and kind <> 'grant' and created_at >= to_timestamp($2::float8) and created_at < to_timestamp($3::float8)
       group by 1, 2
       union all
       select floor(extract(epoch from created_at) / $4) * $4 as start, model, sum(price) as spent, count(*) as n
       from usage_records
       where key_id = $1 and price > 0 and created_at >= to_timestamp($2::float8) and created_at < to_timestamp($3::float8)
       group by 1, 2
     ) b group by start, model order by start, model`,
    [keyId, since, until, width],
  );
  return rows.map((r) => ({ start: num(r.start), model: r.model, spent: num(r.spent), count: num(r.count) }));
}
