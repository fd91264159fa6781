import type { Logger } from 'pino';
import type { Db } from './db';
import type { ChannelErrorView } from '../proxy/channel-health';

/** One channel's failures as the operator's view shows them. */
export interface ChannelErrorSummary {
  /** Failures within the last 24 hours. */
  failed: number;
  /** The newest retryable failure (connection, 429, 5xx), unix seconds; null when none. */
  lastRetryableAt: number | null;
  recent: ChannelErrorView[];
}

/** Rows written at most at once; failures beyond it while a write is slow are dropped (counted in the log). */
const MAX_PENDING = 200;
const RECENT = 5;
const KEEP = "interval '24 hours'";

/**
 * The failures of upstream video requests, durable and shared: the worker records them (it
 * calls the providers), every API process reads them for GET /admin/channels. A record never
 * waits for the store: rows are queued and written in the background, so an activity's retry
 * loop is not slowed by its bookkeeping, and a store that is down costs rows, not tasks.
 */
export class ChannelErrorLog {
  private pending: { channel: string; retryable: boolean; message: string }[] = [];
  private writing: Promise<void> | null = null;
  private dropped = 0;
  private lastPrune = 0;

  constructor(
    private readonly db: Db,
    private readonly logger?: Logger,
  ) {}

  record(channel: string, retryable: boolean, message: string): void {
    if (this.pending.length >= MAX_PENDING) {
      this.dropped++;
      return;
    }
    // Bounded: an upstream's error text is the provider's, and only its head says why.
    this.pending.push({ channel, retryable, message: message.slice(0, 500) });
    this.writing ??= this.write();
  }

  /** Resolves once every failure recorded so far is written (tests, shutdown). */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private async write(): Promise<void> {
    try {
      while (this.pending.length > 0) {
        const rows = this.pending;
        this.pending = [];
        const params = rows.flatMap((r) => [r.channel, r.retryable, r.message]);
        const values = rows.map((_, i) => `($${i * 3 + 1}, $${i * 3 + 2}, $${i * 3 + 3})`).join(', ');
        try {
          await this.db.query(`insert into channel_errors (channel, retryable, message) values ${values}`, params);
          if (Date.now() - this.lastPrune > 60_000) {
            this.lastPrune = Date.now();
            await this.db.query(`delete from channel_errors where at < now() - ${KEEP}`);
          }
        } catch (err) {
          this.logger?.warn({ err: (err as Error).message, rows: rows.length }, 'channel errors could not be recorded');
        }
        if (this.dropped > 0) {
          this.logger?.warn({ dropped: this.dropped }, 'channel errors dropped while the store was slow');
          this.dropped = 0;
        }
      }
    } finally {
      this.writing = null;
    }
  }

  /** Each named channel's failures of the last 24 hours: two queries whatever the number of channels. */
  async summaries(channels: readonly string[]): Promise<Map<string, ChannelErrorSummary>> {
    const out = new Map<string, ChannelErrorSummary>(channels.map((c) => [c, { failed: 0, lastRetryableAt: null, recent: [] }]));
    if (channels.length === 0) return out;
    const counts = await this.db.query<{ channel: string; failed: string | number; last_retryable: string | number | null }>(
      `select channel, count(*) as failed,
              extract(epoch from max(at) filter (where retryable))::bigint as last_retryable
       from channel_errors where channel = any($1::text[]) and at > now() - ${KEEP} group by channel`,
      [channels],
    );
    for (const row of counts) {
      const summary = out.get(row.channel);
      if (!summary) continue;
      summary.failed = Number(row.failed);
      summary.lastRetryableAt = row.last_retryable === null ? null : Number(row.last_retryable);
    }
    const recent = await this.db.query<{ channel: string; at: string | number; message: string }>(
      `select channel, extract(epoch from at)::bigint as at, message from (
         select channel, at, message, row_number() over (partition by channel order by id desc) as n
         from channel_errors where channel = any($1::text[]) and at > now() - ${KEEP}
       ) newest where n <= ${RECENT} order by channel, n`,
      [channels],
    );
    for (const row of recent) out.get(row.channel)?.recent.push({ at: Number(row.at), message: row.message });
    return out;
  }
}
