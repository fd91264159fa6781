/**
 * Holds of text requests. A text answer's price is known only once it ends, so before a
 * request goes upstream its worst-case price is held against the key (api_keys.held, one
 * text_holds row): a video charge or another text request may spend only balance - held, so
 * however many requests run at once a key cannot spend money it does not have. When the answer
 * ends, UsageRecorder settles the hold in the transaction that writes its usage record: the
 * hold row is deleted (the claim: whoever deletes it bills it, once), held and the key's text
 * requests in flight go down, and the balance moves by the real price.
 *
 * A hold is owned by the API process that took it (gateway_instances, a heartbeat per process).
 * A process that dies mid-answer cannot settle: once its heartbeat is older than
 * TEXT_HOLD_ORPHAN_SECONDS, any live process settles its holds at their full amount (what the
 * provider produced is unknown, and the hold is its upper bound), after writing what the dead
 * process's settlement journal holds, at the real price, for the answers it had ended.
 *
 * With the embedded store, the one API process takes holds from leases instead (text-leases.ts),
 * which this sweep returns for a process that died, after writing what its journal holds.
 *
 * Hold lifecycle, and who moves it:
 *   (none) --hold [API, before the upstream call]--> held
 *   held --settle [API, when the answer ends: usage record at the real price, or none when no
 *                  answer was produced]--> (gone)
 *   held --orphan [any API process, when the holder's heartbeat stopped]--> (gone, billed in full)
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { InsufficientBalance, num, UnknownKey } from './ledger';
import { metrics } from '../metrics/metrics';
import type { Db } from '../store/db';
import { PerKeyBatches } from './per-key-batches';

export interface TextHoldRequest {
  keyId: string;
  requestId: string;
  model: string;
  endpoint: 'messages' | 'chat' | 'responses';
  streamed: boolean;
  /** Credits: the request's worst-case price. */
  amount: number;
}

/** Where a text request's hold is taken: a text_holds row each (TextHolds) or a lease (TextLeases). */
export interface TextHoldSource {
  hold(request: TextHoldRequest): Promise<string>;
}

/** The key already has its maximum of text requests in flight. */
export class TooManyTextRequests extends Error {
  constructor(readonly limit: number) {
    super(`${limit} text requests in flight`);
  }
}

/** How often a process says it is alive, at most: several beats fit in the orphan window. */
const HEARTBEAT_SECONDS = 10;

interface HoldItem extends TextHoldRequest {
  holdId: string;
}

export class TextHolds implements TextHoldSource {
  /** This process, as gateway_instances knows it. */
  readonly instanceId = `gw_${randomUUID().replace(/-/g, '')}`;
  private readonly batches: PerKeyBatches<HoldItem, string>;
  private timer: NodeJS.Timeout | null = null;
  private recoverJournals: ((live: () => Promise<ReadonlySet<string>>) => Promise<unknown>) | null = null;

  constructor(
    private readonly db: Db,
    /** Text requests in flight per key when the key sets no cap of its own. */
    private readonly defaultMaxInFlight: number,
    private readonly logger: Logger,
    /** A process silent this long is dead, and its holds orphaned. */
    private readonly orphanAfterSeconds = 60,
  ) {
    this.batches = new PerKeyBatches((keyId, items) => this.holdBatch(keyId, items));
  }

  /**
   * Registers this process and settles the holds of dead ones: at once those of every other
   * process when the store is embedded (it has one owner, so they are all gone), then every
   * heartbeat those whose holder stopped beating. `recoverJournals` (UsageRecorder.recover) is
   * given how to read the processes alive, and writes first what the others' journals hold.
   */
  async start(recoverJournals?: (live: () => Promise<ReadonlySet<string>>) => Promise<unknown>): Promise<void> {
    this.recoverJournals = recoverJournals ?? null;
    await this.beat();
    await this.settleOrphans(this.db.kind === 'embedded' ? 0 : this.orphanAfterSeconds);
    this.timer = setInterval(
      () => {
        void this.beat()
          .then(() => this.settleOrphans(this.orphanAfterSeconds))
          .catch((err: unknown) => this.logger.warn({ err: (err as Error).message }, 'text hold heartbeat failed; retrying'));
      },
      Math.min(HEARTBEAT_SECONDS, this.orphanAfterSeconds / 3) * 1000,
    );
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * Holds `amount` credits of the key for one request; resolves with the hold's id. Rejects with
   * InsufficientBalance (what is available is less than the amount; unlimited keys are never
   * refused for it) or TooManyTextRequests. Holds of one key arriving together are decided in
   * one statement, in order, exactly as if each were taken alone.
   */
  hold(request: TextHoldRequest): Promise<string> {
    return this.batches.run(request.keyId, { ...request, holdId: `hold_${randomUUID().replace(/-/g, '')}` });
  }

  private async holdBatch(keyId: string, items: readonly HoldItem[]): Promise<(string | Error)[]> {
    if (items.length === 1) return [await this.holdOne(keyId, items[0])];
    const rows = await this.db.query<{ outcome: 'held' | 'balance' | 'busy'; available_before: string | number; cap: number }>(
      `with recursive key as (
         select id, limited, balance - held as available, text_in_flight, coalesce(max_text_in_flight, $2::int) as cap
         from api_keys where id = $1 for update
       ), input as (
         select i.hold_id, i.request_id, i.model, i.endpoint, i.streamed, i.amount, i.ord
         from unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::boolean[], $8::bigint[]) with ordinality
           as i(hold_id, request_id, model, endpoint, streamed, amount, ord)
       ), walk (ord, available, in_flight, outcome, available_before) as (
         select 0::bigint, k.available, k.text_in_flight, '', k.available from key k
         union all
         select i.ord,
                case when d.outcome = 'held' then w.available - i.amount else w.available end,
                case when d.outcome = 'held' then w.in_flight + 1 else w.in_flight end,
                d.outcome, w.available
         from walk w
         join input i on i.ord = w.ord + 1
         cross join key k
         cross join lateral (select case
           when w.in_flight >= k.cap then 'busy'
           when k.limited and w.available < i.amount then 'balance'
           else 'held' end as outcome) d
       ), held as (
         insert into text_holds (id, key_id, instance_id, request_id, model, endpoint, streamed, amount)
         select i.hold_id, $1, $9, i.request_id, i.model, i.endpoint, i.streamed, i.amount
         from input i join walk w using (ord) where w.outcome = 'held'
         returning amount
       ), moved as (
         update api_keys set held = held + (select sum(amount) from held), text_in_flight = text_in_flight + (select count(*) from held)
         where id = $1 and exists (select 1 from held) returning id
       )
       select w.outcome, w.available_before, k.cap from walk w cross join key k where w.ord > 0 order by w.ord`,
      [
        keyId,
        this.defaultMaxInFlight,
        items.map((i) => i.holdId),
        items.map((i) => i.requestId),
        items.map((i) => i.model),
        items.map((i) => i.endpoint),
        items.map((i) => i.streamed),
        items.map((i) => i.amount),
        this.instanceId,
      ],
      'text_hold_batch',
    );
    if (rows.length === 0) throw new UnknownKey(`no key ${keyId}`);
    return items.map((item, i): string | Error => {
      const row = rows[i];
      if (!row) return new Error(`no outcome for hold ${i} of the batch`);
      switch (row.outcome) {
        case 'held':
          return item.holdId;
        case 'balance':
          return new InsufficientBalance(num(row.available_before), item.amount);
        case 'busy':
          return new TooManyTextRequests(row.cap);
      }
    });
  }

  /**
   * A lone hold (no burst on the key): the conditional update is the decision, without the
   * batch's walk, which costs the embedded store several times more per statement.
   */
  private async holdOne(keyId: string, item: HoldItem): Promise<string | Error> {
    const [row] = await this.db.query<{ held: boolean; limited: boolean; available: string | number; in_flight: number; cap: number }>(
      `with moved as (
         update api_keys set held = held + $3, text_in_flight = text_in_flight + 1
         where id = $1 and text_in_flight < coalesce(max_text_in_flight, $2::int) and (not limited or balance - held >= $3)
         returning id
       ), held as (
         insert into text_holds (id, key_id, instance_id, request_id, model, endpoint, streamed, amount)
         select $4, $1, $5, $6, $7, $8, $9, $3 from moved
         returning id
       )
       select exists (select 1 from held) as held, k.limited, k.balance - k.held as available, k.text_in_flight as in_flight,
              coalesce(k.max_text_in_flight, $2::int) as cap
       from api_keys k where k.id = $1`,
      [keyId, this.defaultMaxInFlight, item.amount, item.holdId, this.instanceId, item.requestId, item.model, item.endpoint, item.streamed],
      'text_hold_one',
    );
    if (!row) throw new UnknownKey(`no key ${keyId}`);
    if (row.held) return item.holdId;
    // Read before the update: when both could refuse, the cap is named, as the batch does.
    return row.in_flight >= row.cap ? new TooManyTextRequests(row.cap) : new InsufficientBalance(num(row.available), item.amount);
  }

  private async beat(): Promise<void> {
    await this.db.query('insert into gateway_instances (id) values ($1) on conflict (id) do update set seen_at = now()', [this.instanceId]);
  }

  /**
   * Settles the holds of processes silent for `silentSeconds` (0: every other process) at their
   * full amount, as usage records with outcome `orphaned`, and forgets those processes. One
   * transaction; a hold another process settles meanwhile is not found twice (the delete is the
   * claim). Resolves with how many holds it settled. What the dead processes journaled as
   * answered is written first, at its real price (recoverJournals).
   */
  async settleOrphans(silentSeconds: number): Promise<number> {
    // Every other process is gone at silentSeconds 0 (the embedded store's start).
    await this.recoverJournals?.(async () =>
      silentSeconds === 0
        ? new Set<string>()
        : new Set(
            (
              await this.db.query<{ id: string }>(`select id from gateway_instances where seen_at >= now() - ($1::int * interval '1 second')`, [silentSeconds])
            ).map((r) => r.id),
          ),
    );
    const settled = await this.db.transaction(async (tx) => {
      const dead = (
        await tx.query<{ id: string }>(`select id from gateway_instances where id <> $1 and seen_at < now() - ($2::int * interval '1 second')`, [
          this.instanceId,
          silentSeconds,
        ])
      ).map((r) => r.id);
      // Holds and leases can outlive their process's row (a process that died before its first beat).
      const orphanedIds = (
        await tx.query<{ instance_id: string }>(
          `select h.instance_id from text_holds h
           where h.instance_id <> $1 and not exists (select 1 from gateway_instances g where g.id = h.instance_id)
           union
           select l.instance_id from text_leases l
           where l.instance_id <> $1 and not exists (select 1 from gateway_instances g where g.id = l.instance_id)`,
          [this.instanceId],
        )
      ).map((r) => r.instance_id);
      const gone = [...dead, ...orphanedIds];
      if (gone.length === 0) return [];
      // Keys in id order, as every multi-key writer locks them, so two writers cannot deadlock.
      await tx.query(
        `select id from api_keys where id in (select key_id from text_holds where instance_id = any($1::text[])
                                              union select key_id from text_leases where instance_id = any($1::text[])) order by id for update`,
        [gone],
      );
      // What their leases still set aside goes back to the keys: what the journals held was
      // billed from them first (recoverJournals), answered requests at their price and the
      // others in full.
      await tx.query(
        `with returned as (
           delete from text_leases where instance_id = any($1::text[]) returning key_id, amount, slots
         ), per_key as (
           select key_id, sum(amount) as amount, sum(slots) as slots from returned group by key_id
         )
         update api_keys k set held = k.held - p.amount, text_in_flight = k.text_in_flight - p.slots from per_key p where k.id = p.key_id`,
        [gone],
      );
      const rows = await tx.query<{ key_id: string; amount: string | number }>(
        `with orphan as (
           delete from text_holds where instance_id = any($1::text[])
           returning id, key_id, request_id, model, endpoint, streamed, amount
         ), recorded as (
           insert into usage_records (id, request_id, key_id, model, channel, endpoint, streamed, outcome,
                                      input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, price)
           select 'use_' || substr(id, 6), request_id, key_id, model, '', endpoint, streamed, 'orphaned', 0, 0, 0, 0, amount from orphan
           on conflict (id) do nothing
           returning key_id
         ), per_key as (
           select key_id, sum(amount) as amount, count(*) as n from orphan group by key_id
         ), moved as (
           update api_keys k set held = k.held - p.amount, balance = k.balance - p.amount, text_in_flight = k.text_in_flight - p.n
           from per_key p where k.id = p.key_id returning k.id
         )
         select key_id, amount from orphan`,
        [gone],
      );
      await tx.query('delete from gateway_instances where id = any($1::text[])', [gone]);
      if (rows.length > 0) {
        this.logger.warn(
          { holds: rows.length, processes: gone.length },
          'settled the text holds of gateway processes that stopped mid-answer, at their full amount',
        );
      }
      return rows;
    });
    for (const s of settled) {
      metrics.charges.inc({ kind: 'text' });
      metrics.chargedCredits.inc({ kind: 'text' }, num(s.amount));
    }
    return settled.length;
  }

  /** Called on a graceful stop, after every answer settled: this process holds nothing more. */
  async retire(): Promise<void> {
    this.stop();
    await this.db.query(
      `delete from gateway_instances where id = $1
       and not exists (select 1 from text_holds where instance_id = $1) and not exists (select 1 from text_leases where instance_id = $1)`,
      [this.instanceId],
    );
  }
}
