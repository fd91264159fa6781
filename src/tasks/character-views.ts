/**
 * Character views: each finished character as its workflow returned it, in the store every API
 * replica shares, so that reading a character, resolving an `@username` or listing a key's
 * library is a store read instead of a describe and a result fetch on the Temporal server per
 * character.
 *
 * What the store knows without a view: every character is charged (billed_tasks, kind
 * character, its id as the task id, the maker's key) before its workflow starts, and a charge is
 * never deleted. So an id with no charge, or one charged to another key, or one whose charge
 * was refunded (the character could not be made), is no character of this key, and only a
 * charged character with no view yet is a question for Temporal: one still being made, one
 * whose view write was lost, or one made before views existed. The API writes the view when its
 * create returns the character, and again when a read finds it finished in Temporal.
 *
 * A character is final once made, so its view has no lease. Views and characters leave
 * together: Temporal keeps a closed run for TASK_RETENTION_DAYS, and a view is pruned a day
 * after that, counted from the character's creation (its run closes minutes later at most).
 */
import type { Sql } from '../store/db';
import type { CharacterState } from './task';

/** What the store says of one character id for one key. */
export type CharacterLook =
  /** A finished character of this key. */
  | { found: 'view'; character: CharacterState }
  /** No character of this key: never charged to it, refunded (not made), or past retention. */
  | { found: 'none' }
  /** Charged to this key with no view: Temporal knows whether it is finished. */
  | { found: 'ask' };

/** One entry of a key's library, newest first: its view, or null to ask Temporal. */
export interface LibraryEntry {
  id: string;
  character: CharacterState | null;
}

interface LookRow {
  key_id: string;
  charge: string;
  past_retention: boolean;
  view: CharacterState | null;
}

export class CharacterViews {
  constructor(
    private readonly db: Sql,
    /** TASK_RETENTION_DAYS: how long Temporal keeps a character's closed run. */
    private readonly retentionDays: number,
  ) {}

  async look(id: string, ownerId: string): Promise<CharacterLook> {
    const [row] = await this.db.query<LookRow>(
      `select b.key_id, b.state as charge, b.created_at < now() - make_interval(days => $2::int + 1) as past_retention, v.state as view
       from billed_tasks b left join character_views v on v.character_id = b.task_id
       where b.task_id = $1 and b.kind = 'character'`,
      [id, this.retentionDays],
      'character_look',
    );
    if (!row || row.key_id !== ownerId || row.charge === 'refunded') return { found: 'none' };
    if (row.view) return { found: 'view', character: row.view };
    return row.past_retention ? { found: 'none' } : { found: 'ask' };
  }

  /** The key's `limit` newest characters not refunded (being made, made, or not known to be either). */
  async library(ownerId: string, limit: number): Promise<LibraryEntry[]> {
    const rows = await this.db.query<{ task_id: string; view: CharacterState | null }>(
      `select b.task_id, v.state as view
       from billed_tasks b left join character_views v on v.character_id = b.task_id
       where b.key_id = $1 and b.kind = 'character' and b.state <> 'refunded'
         and b.created_at >= now() - make_interval(days => $3::int + 1)
       order by b.created_at desc, b.task_id desc limit $2`,
      [ownerId, limit, this.retentionDays],
    );
    return rows.map((r) => ({ id: r.task_id, character: r.view }));
  }

  /** Writes a finished character's view; a second write of the same character changes nothing. */
  async save(character: CharacterState): Promise<void> {
    await this.db.query(
      `insert into character_views (character_id, state, created_at) values ($1, $2::jsonb, to_timestamp($3))
       on conflict (character_id) do nothing`,
      [character.id, JSON.stringify(character), character.createdAt],
    );
  }

  /** Removes the views of characters past the retention by over a day; how many. */
  async prune(): Promise<number> {
    const rows = await this.db.query<{ character_id: string }>(
      'delete from character_views where created_at < now() - make_interval(days => $1::int + 1) returning character_id',
      [this.retentionDays],
    );
    return rows.length;
  }
}
