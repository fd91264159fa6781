/**
 * A key's characters, newest first, for GET /motion/v1/characters. Like the task list
 * (task-list.ts) the order comes from the store: every character is charged (billed_tasks,
 * kind character, its id as the task id) before its workflow starts; each one is then read as
 * GET /motion/v1/characters/{id} reads it, so one still being made, failed, or past
 * retention is left out.
 */
import type { Db } from '../store/db';
import type { CharacterState } from './task';
import type { CharacterService } from './character-service';

export async function listCharacters(db: Db, characters: Pick<CharacterService, 'get'>, ownerId: string, limit: number): Promise<CharacterState[]> {
  const rows = await db.query<{ task_id: string }>(
    `select task_id from billed_tasks where key_id = $1 and kind = 'character' and state <> 'refunded'
     order by created_at desc, task_id desc limit $2`,
    [ownerId, limit],
  );
  const found = await Promise.all(rows.map((r) => characters.get(r.task_id, ownerId)));
  return found.filter((c): c is CharacterState => c !== null);
}
