/**
 * A key's video tasks in creation order, for GET /v1/videos. The order and the cursor come from
 * the store (billed_tasks: every video task is charged, at a price or at zero, before its
 * workflow starts, in the same store as the key), so a task is listed as soon as its create
 * answered, with no wait for Temporal's visibility; each task's state is then read as a status
 * read reads it. A charge whose workflow never started (refunded at once) or whose workflow
 * Temporal no longer keeps (past TASK_RETENTION_DAYS) is not a task: it is skipped, and so is a
 * task its owner deleted (deleted-tasks.ts). A deleted task still serves as the cursor of a page.
 * The operator's listing (GET /admin/tasks) is the same, across keys, with filters.
 */
import type { Db } from '../store/db';
import type { TaskState, TaskStatus } from './task';
import type { TaskService } from './task-service';

export interface TaskListQuery {
  /** The id of the last task of the previous page. */
  after?: string;
  limit: number;
  order: 'asc' | 'desc';
}

/** GET /admin/tasks: newest first across keys, narrowed by key, model and status. */
export interface AdminTaskListQuery {
  after?: string;
  limit: number;
  keyId?: string;
  model?: string;
  status?: TaskStatus;
}

/** A listed task with what the store knows of it. */
export interface ListedTask {
  state: TaskState;
  keyId: string;
  /** Credits charged for it; 0 once refunded. */
  cost: number;
}

export interface TaskListPage {
  tasks: ListedTask[];
  /** More rows follow the last one looked at (the page may hold fewer than `limit` tasks). */
  hasMore: boolean;
  /** The cursor of the next page: the last row looked at, listed or skipped. */
  lastId: string | null;
}

/** An `after` that is not one of the key's tasks. */
export class UnknownCursor extends Error {}

/**
 * The charge states a task status can have: the status itself lives in the workflow, so the
 * store narrows the rows and the task's state decides (a refunded charge is a failed or
 * cancelled task; a charged or started one is pending or processing).
 */
const CHARGE_STATES: Readonly<Record<TaskStatus, readonly string[]>> = {
  pending: ['charged', 'started'],
  processing: ['charged', 'started'],
  completed: ['completed'],
  failed: ['refunded'],
};

export class TaskList {
  constructor(
    private readonly db: Db,
    private readonly tasks: TaskService,
  ) {}

  async page(ownerId: string, query: TaskListQuery): Promise<TaskListPage> {
    return this.list({ keyId: ownerId, after: query.after, limit: query.limit, desc: query.order === 'desc' });
  }

  /** Across keys (the operator's view), newest first. */
  async adminPage(query: AdminTaskListQuery): Promise<TaskListPage> {
    return this.list({ ...query, desc: true });
  }

  private async list(query: AdminTaskListQuery & { desc: boolean }): Promise<TaskListPage> {
    const { desc } = query;
    if (query.after !== undefined) {
      const [cursor] = await this.db.query<{ task_id: string }>(
        "select task_id from billed_tasks where task_id = $1 and ($2::text is null or key_id = $2) and kind = 'video'",
        [query.after, query.keyId ?? null],
      );
      if (!cursor) throw new UnknownCursor(query.after);
    }
    // (created_at, task_id) orders tasks created in the same microsecond too.
    const rows = await this.db.query<{ task_id: string; key_id: string; cost: string | number }>(
      `select t.task_id, t.key_id, case when t.state = 'refunded' then 0 else t.amount end as cost from billed_tasks t
       where ($1::text is null or t.key_id = $1) and t.kind = 'video'
         and not exists (select 1 from deleted_tasks d where d.task_id = t.task_id)
         and ($2::text is null or (t.created_at, t.task_id) ${desc ? '<' : '>'} (select c.created_at, c.task_id from billed_tasks c where c.task_id = $2))
         and ($4::text is null or t.model = $4)
         and ($5::text[] is null or t.state = any($5::text[]))
       order by t.created_at ${desc ? 'desc' : 'asc'}, t.task_id ${desc ? 'desc' : 'asc'}
       limit $3`,
      [query.keyId ?? null, query.after ?? null, query.limit + 1, query.model ?? null, query.status ? CHARGE_STATES[query.status] : null],
    );
    const looked = rows.slice(0, query.limit);
    const states = await Promise.all(looked.map((r) => this.tasks.get(r.task_id, r.key_id)));
    const tasks: ListedTask[] = [];
    looked.forEach((r, i) => {
      const state = states[i];
      if (state && (query.status === undefined || state.status === query.status)) tasks.push({ state, keyId: r.key_id, cost: Number(r.cost) });
    });
    return { tasks, hasMore: rows.length > query.limit, lastId: looked.at(-1)?.task_id ?? null };
  }
}
