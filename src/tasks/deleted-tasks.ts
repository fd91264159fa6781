/**
 * Which video tasks their owner deleted (DELETE /v1/videos/{id}): one row per task in the
 * store every API replica shares, so a deletion answered by one replica is seen by all the
 * others on their next read (every status read asks, in the query of TaskViews.look). Temporal
 * is no help here: it deletes an execution asynchronously (it stays describable for a while)
 * and retention keeps a closed one for days.
 */
import type { Db } from '../store/db';

export class DeletedTasks {
  constructor(private readonly db: Db) {}

  /**
   * Marks the key's task deleted. True when this call marked it; false when it was marked
   * already (a second delete, or one racing this one), so only one delete answers 200.
   */
  async mark(taskId: string, ownerId: string): Promise<boolean> {
    const rows = await this.db.query<{ task_id: string }>(
      'insert into deleted_tasks (task_id, key_id) values ($1, $2) on conflict (task_id) do nothing returning task_id',
      [taskId, ownerId],
    );
    return rows.length > 0;
  }
}
