/**
 * A key's video tasks in creation order, for GET /v1/videos. The order and the cursor come from
 * the store (billed_tasks: every video task is charged, at a price or at zero, before its
 * workflow starts, in the same store as the key), so a task is listed as soon as its create
 * answered, with no wait for Temporal's visibility; each task's state is then read as a status
 * read reads it. A charge whose workflow never started (refunded at once) or whose workflow
 * Temporal no longer keeps (past TASK_RETENTION_DAYS) is not a task: it is skipped, and so is a
 * task its owner deleted (deleted-tasks.ts). A deleted task still serves as the cursor of a page.
 */
import type { Db } from '../store/db';
import type { TaskState } from './task';
import type { TaskService } from './task-service';

export interface TaskListQuery {
  /** The id of the last task of the previous page. */
  after?: string;
  limit: number;
  order: 'asc' | 'desc';
}

export interface TaskListPage {
  tasks: TaskState[];
  /** More rows follow the last one looked at (the page may hold fewer than `limit` tasks). */
  hasMore: boolean;
  /** The cursor of the next page: the last row looked at, listed or skipped. */
  lastId: string | null;
}

/** An `after` that is not one of the key's tasks. */
export class UnknownCursor extends Error {}

export class TaskList {
  constructor(
    private readonly db: Db,
    private readonly tasks: TaskService,
  ) {}

  async page(ownerId: string, query: TaskListQuery): Promise<TaskListPage> {
    const desc = query.order === 'desc';
    if (query.after !== undefined) {
      const [cursor] = await this.db.query<{ task_id: string }>("select task_id from billed_tasks where task_id = $1 and key_id = $2 and kind = 'video'", [
        query.after,
        ownerId,
      ]);
      if (!cursor) throw new UnknownCursor(query.after);
    }
    // (created_at, task_id) orders tasks created in the same microsecond too.
    const rows = await this.db.query<{ task_id: string }>(
      `select t.task_id from billed_tasks t
       where t.key_id = $1 and t.kind = 'video'
         and not exists (select 1 from deleted_tasks d where d.task_id = t.task_id)
         and ($2::text is null or (t.created_at, t.task_id) ${desc ? '<' : '>'} (select c.created_at, c.task_id from billed_tasks c where c.task_id = $2))
       order by t.created_at ${desc ? 'desc' : 'asc'}, t.task_id ${desc ? 'desc' : 'asc'}
       limit $3`,
      [ownerId, query.after ?? null, query.limit + 1],
    );
    const looked = rows.slice(0, query.limit);
    const states = await Promise.all(looked.map((r) => this.tasks.get(r.task_id, ownerId)));
    return {
      tasks: states.filter((s): s is TaskState => s !== null),
      hasMore: rows.length > query.limit,
      lastId: looked.at(-1)?.task_id ?? null,
    };
  }
}
