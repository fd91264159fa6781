/**
 * Text holds taken from a credit lease, for the embedded store: there one API process owns the
 * store (embedded-lock.ts), so it can set credits and in-flight slots of a key aside in one
 * statement (a lease: text_leases, counted in api_keys.held and text_in_flight) and take each
 * request's hold from it in memory. A request's hold costs a line in the settlement journal
 * (SettlementJournal.record, before the request goes upstream) instead of a statement; a
 * statement runs when a lease runs short, and then for the next LEASE_REQUESTS requests' worth.
 *
 * What a key can spend is decided exactly as with one hold row per request (TextHolds): a
 * lease grows only by what the key has available (balance - held) and its cap leaves, and what
 * this process leased and does not use is its own to give back. It gives it back when another
 * spender of the key is refused (UsageRecorder.afterSettled), before any view of the key's money
 * (UsageRecorder.flush), after a second without requests, and on a graceful stop. A process
 * that dies leaves its lease to the next start: it writes what the journal holds (settlements
 * at their price, holds whose answer never ended in full) and returns the rest
 * (TextHolds.settleOrphans).
 *
 * The accounts of a key's lease, in this process:
 *   amount - held: credits leased and free; a settled answer consumes min(price, its hold)
 *     from amount at once, and from the store's lease and held when its batch is written
 *   slots - inFlight: requests in flight the lease still admits
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { InsufficientBalance, num, UnknownKey } from './ledger';
import type { Db } from '../store/db';
import type { JournalMark, SettlementJournal } from './settlement-journal';
import { TooManyTextRequests, type TextHoldRequest, type TextHoldSource } from './text-holds';

/** A lease grows by this many requests' worth of their worst-case price at most (all the key has, if less). */
const LEASE_REQUESTS = 32;
/** A lease grows by this many in-flight slots at most (what the key's cap leaves, if less). */
const LEASE_SLOTS = 16;
/** A lease unused this long is given back. */
const IDLE_MS = 1000;

/** The journal could not record a hold: the request is not sent, since it could not be billed. */
export class HoldNotRecorded extends Error {}

interface KeyLease {
  keyId: string;
  amount: number;
  slots: number;
  held: number;
  inFlight: number;
  /** The statements of this lease, one after another. */
  queue: Promise<unknown>;
  queued: number;
  lastUsed: number;
}

/** A hold taken from a lease, until its settlement. */
export interface LeasedHold {
  keyId: string;
  amount: number;
  /** The hold's line in the journal. */
  mark: JournalMark;
}

export class TextLeases implements TextHoldSource {
  private readonly leases = new Map<string, KeyLease>();
  private readonly holds = new Map<string, LeasedHold>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Db,
    private readonly journal: SettlementJournal,
    /** This process, as gateway_instances and the journal's file names know it. */
    private readonly instanceId: string,
    /** Text requests in flight per key when the key sets no cap of its own. */
    private readonly defaultMaxInFlight: number,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      const now = Date.now();
      for (const lease of this.leases.values()) {
        if (lease.inFlight === 0 && now - lease.lastUsed >= IDLE_MS) {
          this.giveBack(lease).catch((err: unknown) => this.logger.warn({ err: (err as Error).message }, 'could not give an idle text lease back; retrying'));
        }
      }
    }, IDLE_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * Holds `amount` credits and one in-flight slot of the key for one request; resolves with the
   * hold's id. Rejects with InsufficientBalance (the key cannot cover the amount; unlimited keys
   * are never refused for it), TooManyTextRequests, or HoldNotRecorded.
   */
  hold(request: TextHoldRequest): Promise<string> {
    const lease = this.lease(request.keyId);
    // Behind a statement of this lease, a request waits its turn: holds are decided in order.
    if (lease.queued === 0 && this.fits(lease, request.amount)) {
      try {
        return Promise.resolve(this.take(lease, request));
      } catch (err) {
        return Promise.reject(err as Error);
      }
    }
    return this.serially(lease, async () => {
      if (!this.fits(lease, request.amount)) await this.grow(lease, request.amount);
      return this.take(lease, request);
    });
  }

  /**
   * The hold's answer ended at `price`: its slot and credits are free again, less what it
   * consumed (min(price, amount)). Null when the hold is not one of this process's leases.
   */
  release(holdId: string, price: number): { hold: LeasedHold; consumed: number } | null {
    const hold = this.holds.get(holdId);
    if (!hold) return null;
    this.holds.delete(holdId);
    const lease = this.lease(hold.keyId);
    const consumed = Math.min(Math.max(price, 0), hold.amount);
    lease.held -= hold.amount;
    lease.inFlight--;
    lease.amount -= consumed;
    lease.lastUsed = Date.now();
    return { hold, consumed };
  }

  /** Whether this process has leased anything of the key. */
  hasLease(keyId: string): boolean {
    return this.leases.has(keyId);
  }

  /** Gives back what this process leased of the key (of every key without one) and does not use. */
  async giveBackUnused(keyId?: string): Promise<void> {
    const leases = keyId === undefined ? [...this.leases.values()] : [this.leases.get(keyId)].filter((l): l is KeyLease => l !== undefined);
    await Promise.all(leases.map((lease) => this.giveBack(lease)));
  }

  private lease(keyId: string): KeyLease {
    let lease = this.leases.get(keyId);
    if (!lease) {
      lease = { keyId, amount: 0, slots: 0, held: 0, inFlight: 0, queue: Promise.resolve(), queued: 0, lastUsed: Date.now() };
      this.leases.set(keyId, lease);
    }
    return lease;
  }

  private fits(lease: KeyLease, amount: number): boolean {
    return lease.amount - lease.held >= amount && lease.inFlight < lease.slots;
  }

  private take(lease: KeyLease, request: TextHoldRequest): string {
    const holdId = `hold_${randomUUID().replace(/-/g, '')}`;
    let mark: JournalMark;
    try {
      mark = this.journal.record(
        JSON.stringify({
          hold: holdId,
          keyId: request.keyId,
          amount: request.amount,
          requestId: request.requestId,
          model: request.model,
          endpoint: request.endpoint,
          streamed: request.streamed,
        }),
      );
    } catch (err) {
      this.logger.error({ err: (err as Error).message }, 'the text usage journal could not record a hold; the request is refused');
      throw new HoldNotRecorded('The gateway cannot record what this request may cost right now (its billing journal is failing).');
    }
    lease.held += request.amount;
    lease.inFlight++;
    lease.lastUsed = Date.now();
    this.holds.set(holdId, { keyId: request.keyId, amount: request.amount, mark });
    return holdId;
  }

  /** Runs `step` after the lease's statements under way; nothing else of the lease runs meanwhile. */
  private serially<T>(lease: KeyLease, step: () => Promise<T>): Promise<T> {
    lease.queued++;
    const run = lease.queue.then(step);
    lease.queue = run.then(
      () => undefined,
      () => undefined,
    );
    return run.finally(() => lease.queued--);
  }

  /**
   * Grows the lease so that a hold of `amount` fits, by up to LEASE_REQUESTS such holds and
   * LEASE_SLOTS slots, in one statement; refuses as a hold row would when the key cannot.
   */
  private async grow(lease: KeyLease, amount: number): Promise<void> {
    const free = lease.amount - lease.held;
    const needAmount = Math.max(0, amount - free);
    const wantAmount = Math.max(needAmount, amount * LEASE_REQUESTS - free);
    const needSlots = Math.max(0, lease.inFlight + 1 - lease.slots);
    const wantSlots = Math.max(needSlots, LEASE_SLOTS);
    const [row] = await this.db.query<{
      limited: boolean;
      available: string | number;
      in_flight: number;
      cap: number;
      granted_amount: string | number | null;
      granted_slots: number | null;
    }>(
      `with k as (
         select limited, balance - held as available, text_in_flight, coalesce(max_text_in_flight, $2::int) as cap
         from api_keys where id = $1 for update
       ), g as (
         select case when k.limited then greatest($3::bigint, least(k.available, $4::bigint)) else $4::bigint end as amount,
                greatest($5::int, least(k.cap - k.text_in_flight, $6::int)) as slots
         from k where (not k.limited or k.available >= $3::bigint) and k.cap - k.text_in_flight >= $5::int
       ), moved as (
         update api_keys set held = held + g.amount, text_in_flight = text_in_flight + g.slots from g where api_keys.id = $1 returning api_keys.id
       ), leased as (
         insert into text_leases (instance_id, key_id, amount, slots) select $7, $1, g.amount, g.slots from g
         on conflict (instance_id, key_id) do update set amount = text_leases.amount + excluded.amount, slots = text_leases.slots + excluded.slots
         returning key_id
       )
       select k.limited, k.available, k.text_in_flight as in_flight, k.cap, g.amount as granted_amount, g.slots as granted_slots
       from k left join g on true`,
      [lease.keyId, this.defaultMaxInFlight, needAmount, wantAmount, needSlots, wantSlots, this.instanceId],
      'text_lease_grow',
    );
    if (!row) throw new UnknownKey(`no key ${lease.keyId}`);
    if (row.granted_amount === null || row.granted_slots === null) {
      // As a hold row is refused: the cap is named when both refuse.
      if (row.cap - row.in_flight < needSlots) throw new TooManyTextRequests(row.cap);
      throw new InsufficientBalance(num(row.available) + free, amount);
    }
    lease.amount += num(row.granted_amount);
    lease.slots += row.granted_slots;
  }

  /** Gives the unused part of a lease back to the key, and forgets a lease that is all given back. */
  private giveBack(lease: KeyLease): Promise<void> {
    return this.serially(lease, async () => {
      const amount = lease.amount - lease.held;
      const slots = lease.slots - lease.inFlight;
      if (amount > 0 || slots > 0) {
        // The store's lease is this one plus what settled answers consumed and their batch has not
        // written yet: a row is deleted only when nothing of it is left to anybody.
        await this.db.query(
          `with shrunk as (
             update text_leases set amount = amount - $3, slots = slots - $4
             where instance_id = $1 and key_id = $2 and (amount <> $3 or slots <> $4) returning key_id
           ), gone as (
             delete from text_leases where instance_id = $1 and key_id = $2 and amount = $3 and slots = $4 returning key_id
           )
           update api_keys set held = held - $3, text_in_flight = text_in_flight - $4
           where id = $2 and exists (select 1 from shrunk union all select 1 from gone)`,
          [this.instanceId, lease.keyId, amount, slots],
          'text_lease_give_back',
        );
        lease.amount -= amount;
        lease.slots -= slots;
      }
      if (lease.amount === 0 && lease.slots === 0 && lease.inFlight === 0 && lease.queued === 1) this.leases.delete(lease.keyId);
    });
  }
}
