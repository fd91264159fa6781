/**
 * Task views: each video task's state as its workflow last published it, in the store every API
 * replica shares, so that a status read is one primary-key read of the store instead of a
 * describe on the Temporal server, whose queue is longest exactly when many tasks run.
 *
 * Four writers, each for what it alone knows:
 * - the API, once a task's run started: its initial state, which holds until the workflow's
 *   first workflow task changes it (under load that task may wait minutes for a worker). Its
 *   lease is a publish's; a read past it asks Temporal, and when the describe shows that the run
 *   has completed no workflow task yet, so that its state is still the initial one, the API
 *   renews the lease (renewInitial): a client polling a queued task then costs Temporal one
 *   describe a lease, not one a read, exactly while a burst's backlog makes describes slow.
 * - the workflow, through the worker's `taskViews` sink, at every change of its state (the memo
 *   it upserts in the same workflow task). Each publish carries a sequence number that only
 *   grows, so a late write never replaces a newer one. The sink is awaited before the workflow
 *   task completes, so the view is never behind the memo. A publish leases the view for
 *   PUBLISHED_STATE_LEASE_MS.
 * - the step that watches the upstream job, beside each heartbeat: the job's progress, and a
 *   lease. While the lease holds, the view answers reads alone. The step renews it at every
 *   heartbeat, well within its heartbeat timeout, so a lost worker lets the lease lapse when the
 *   server notices the step is lost, and reads go back to Temporal.
 * - the billing reconciler, which drops the views of runs stopped from outside the workflow
 *   (terminated, timed out), found by its sweep of stopped runs: such a run publishes nothing more.
 *
 * A terminal state is final: its view holds for TASK_RETENTION_DAYS, as long as Temporal keeps
 * the run, and is pruned a day after.
 */
import type { Sql } from '../store/db';
import { PerKeyBatches } from '../billing/per-key-batches';
import type { JobProgress } from '../workflows/video-task-types';
import { isTerminal, TERMINAL_STATUSES, type TaskState } from './task';
import { withJobProgress } from './job-progress';
import { metrics } from '../metrics/metrics';

/** What a status read finds in the store for one task: its deletion mark and its view. */
export interface TaskLook {
  deleted: boolean;
  view: TaskView | null;
}

export interface TaskView {
  /** The published state with the watched job's progress overlaid. */
  state: TaskState;
  /** Whether the view may answer a read without Temporal: its lease holds, or its state is terminal. */
  fresh: boolean;
}

interface LookRow {
  deleted: boolean;
  state: TaskState | null;
  job_status: JobProgress['status'] | null;
  job_progress: number | null;
  fresh: boolean | null;
}

/**
 * How long a published state answers reads alone. Every later change of the state is published
 * too, so the lease bounds only how long a view can be behind where a publish did not reach it:
 * a worker of an earlier version, which has no sink, or an operator's reset of the run.
 */
export const PUBLISHED_STATE_LEASE_MS = 60_000;

/** The batches' one queue: every task's writes go together (PerKeyBatches with a single key). */
const ONE_QUEUE = '';
/** Tasks written by one statement at most. */
const MAX_BATCH = 500;

interface Published {
  state: TaskState;
  seq: number;
}

interface Report {
  taskId: string;
  job: JobProgress;
  leaseMs: number;
}

export class TaskViews {
  /**
   * Writes go by group commit: one statement at a time per kind, and the writes arriving while
   * it runs go together as the next. Each statement is a round trip and a commit, which cost the
   * writer and the store more than the rows; with many tasks in flight their heartbeats, which
   * the poll grid brings into step, and their workflow tasks come in bursts.
   */
  private readonly publishes: PerKeyBatches<Published, true>;
  private readonly reports: PerKeyBatches<Report, true>;
  private readonly renewals: PerKeyBatches<string, true>;

  constructor(
    private readonly db: Sql,
    /** How long a terminal state's view is kept: TASK_RETENTION_DAYS. */
    private readonly retentionDays: number,
  ) {
    this.publishes = new PerKeyBatches((_queue, items) => this.publishBatch(items), MAX_BATCH);
    this.reports = new PerKeyBatches((_queue, items) => this.watchedBatch(items), MAX_BATCH);
    this.renewals = new PerKeyBatches((_queue, taskIds) => this.renewBatch(taskIds), MAX_BATCH);
  }

  /**
   * A task's state: from the API once its run started (seq 0, the initial state), then from its
   * workflow's `taskViews` sink. A newer `seq` replaces an older one and nothing replaces a
   * newer one. The lease is PUBLISHED_STATE_LEASE_MS from now, never shortened, and a terminal
   * state's is the retention. Resolves once written.
   */
  async publish(state: TaskState, seq: number): Promise<void> {
    await this.publishes.run(ONE_QUEUE, { state, seq });
  }

  /**
   * The watching step's report: the job's progress, and a lease of `leaseMs` from now (never
   * shortened, so a terminal view keeps its own). A task with no view yet is left alone.
   */
  async watched(taskId: string, job: JobProgress, leaseMs: number): Promise<void> {
    await this.reports.run(ONE_QUEUE, { taskId, job, leaseMs });
  }

  /**
   * Leases a task's initial view (the API's, seq 0) for PUBLISHED_STATE_LEASE_MS from now, never
   * shortened. For a task whose run Temporal has just shown to have completed no workflow task:
   * its state is the initial one. Only the initial view is renewed, so a renewal that arrives
   * after the workflow's first publish changes nothing; and a view that is gone (dropped by the
   * sweep of stopped runs) stays gone.
   */
  async renewInitial(taskId: string): Promise<void> {
    await this.renewals.run(ONE_QUEUE, taskId);
  }

  private async renewBatch(taskIds: readonly string[]): Promise<true[]> {
    await this.db.query(
      `update task_views set fresh_until = greatest(fresh_until, now() + $2::double precision * interval '1 millisecond')
        where task_id = any($1::text[]) and seq = 0`,
      [[...new Set(taskIds)], PUBLISHED_STATE_LEASE_MS],
      'task_view_renew',
    );
    return taskIds.map(() => true);
  }

  /** One statement for a batch of publishes: of a task's, the one with the highest seq. */
  private async publishBatch(items: readonly Published[]): Promise<true[]> {
    const latest = new Map<string, Published>();
    for (const item of items) {
      const seen = latest.get(item.state.id);
      if (!seen || seen.seq < item.seq) latest.set(item.state.id, item);
    }
    const rows = [...latest.values()].map(({ state, seq }) => ({ id: state.id, state, seq, terminal: isTerminal(state.status) }));
    await this.db.query(
      `insert into task_views (task_id, state, seq, fresh_until)
         select e->>'id', e->'state', (e->>'seq')::bigint,
                now() + case when (e->>'terminal')::boolean then $2::double precision * interval '1 day'
                             else $3::double precision * interval '1 millisecond' end
           from jsonb_array_elements($1::jsonb) as e
       on conflict (task_id) do update set
         state = excluded.state,
         seq = excluded.seq,
         -- Never shortened: a terminal state's retention is past any lease a view held before.
         fresh_until = greatest(task_views.fresh_until, excluded.fresh_until)
       where task_views.seq < excluded.seq`,
      [JSON.stringify(rows), this.retentionDays, PUBLISHED_STATE_LEASE_MS],
      'task_view_publish',
    );
    return items.map(() => true);
  }

  /** One statement for a batch of reports: a task's merged (its highest progress, processing over pending, its longest lease). */
  private async watchedBatch(items: readonly Report[]): Promise<true[]> {
    const merged = new Map<string, { id: string; status: JobProgress['status']; progress: number; leaseMs: number }>();
    for (const { taskId, job, leaseMs } of items) {
      const seen = merged.get(taskId);
      merged.set(taskId, {
        id: taskId,
        status: seen?.status === 'processing' ? 'processing' : job.status,
        progress: Math.max(seen?.progress ?? 0, job.progress),
        leaseMs: Math.max(seen?.leaseMs ?? 0, leaseMs),
      });
    }
    await this.db.query(
      `update task_views v set
         job_status = case when e->>'status' = 'processing' then 'processing' else coalesce(v.job_status, e->>'status') end,
         job_progress = greatest(v.job_progress, (e->>'progress')::integer),
         fresh_until = greatest(v.fresh_until, now() + (e->>'leaseMs')::double precision * interval '1 millisecond')
       from jsonb_array_elements($1::jsonb) as e
       where v.task_id = e->>'id'`,
      [JSON.stringify([...merged.values()])],
      'task_view_watched',
    );
    return items.map(() => true);
  }

  /** A status read's one query: the task's deletion mark and its view, if any. */
  async look(taskId: string): Promise<TaskLook> {
    const rows = await this.db.query<LookRow>(
      `select exists (select 1 from deleted_tasks where task_id = $1) as deleted,
              v.state, v.job_status, v.job_progress, v.fresh_until > now() as fresh
         from (select 1) as one left join task_views v on v.task_id = $1`,
      [taskId],
      'task_view_look',
    );
    const row = rows[0];
    if (!row) return { deleted: false, view: null };
    if (!row.state) return { deleted: row.deleted, view: null };
    const job = row.job_status ? { status: row.job_status, progress: row.job_progress ?? 0 } : null;
    return { deleted: row.deleted, view: { state: job ? withJobProgress(row.state, job) : row.state, fresh: row.fresh === true } };
  }

  /**
   * Drops the views of runs stopped from outside their workflow: their reads go back to Temporal.
   * A view that already holds a terminal state stays (a cancelled task published its own end;
   * Temporal's record of the run says the same).
   */
  async forget(taskIds: readonly string[]): Promise<void> {
    if (taskIds.length === 0) return;
    await this.db.query("delete from task_views where task_id = any($1::text[]) and not (state->>'status' = any($2::text[]))", [taskIds, TERMINAL_STATUSES]);
  }

  /** Removes views whose lease ended over a day ago (finished tasks past the retention, abandoned ones); how many. */
  async prune(): Promise<number> {
    const rows = await this.db.query<{ task_id: string }>("delete from task_views where fresh_until < now() - interval '1 day' returning task_id");
    return rows.length;
  }
}

/** A view write that nobody waits for (a create's or a read's, a watching step's): counted by its outcome, a failure left to the leases. */
export function unawaitedViewWrite(writer: 'api' | 'watch', write: Promise<void>): void {
  write.then(
    () => metrics.taskViewWrites.inc({ writer, outcome: 'ok' }),
    () => metrics.taskViewWrites.inc({ writer, outcome: 'failed' }),
  );
}
