/**
 * Task views on both stores: which publish wins, when a view may answer a read alone (its
 * watching step's lease, a terminal state), the job's progress overlaid without going back, the
 * deletion mark read in the same query, and the views dropped or pruned.
 */
import { DeletedTasks } from '../../src/tasks/deleted-tasks';
import { PUBLISHED_STATE_LEASE_MS, TaskViews } from '../../src/tasks/task-views';
import { taskViewSeq } from '../../src/workflows/task-view-sink';
import { initialState, type TaskState } from '../../src/tasks/task';
import { KeyStore } from '../../src/store/keys';
import { migrate } from '../../src/store/migrations';
import { BOTH_STORES, type OpenedStore } from '../support/stores';
import { taskRequest } from '../support/task-request';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('taskViewSeq', () => {
  test('grows with each publish of a run, and a run continued as new starts above every publish of the one before', () => {
    const first = new Date('2026-11-28T10:00:00.000Z');
    const next = new Date(first.getTime() + 1);
    expect(taskViewSeq(first, 2)).toBeGreaterThan(taskViewSeq(first, 1));
    // Even a run that published past what the count holds, continued a millisecond later.
    expect(taskViewSeq(next, 1)).toBeGreaterThan(taskViewSeq(first, 5000));
    expect(Number.isSafeInteger(taskViewSeq(new Date('2255-01-01T00:00:00Z'), 999))).toBe(true);
  });
});

describe.each(BOTH_STORES)('%s', (_name, open) => {
  let opened: OpenedStore;
  let views: TaskViews;
  let keyId: string;
  let n = 0;
  /** A task of its own per test, as published by its workflow at first. */
  const task = (): TaskState =>
    initialState(taskRequest({ taskId: `video_view${++n}`, ownerId: keyId, model: 'motion-2', family: 'motion', endpoint: 'videos' }));

  beforeAll(async () => {
    opened = await open();
    await migrate(opened.db);
    views = new TaskViews(opened.db, 30);
    keyId = (await new KeyStore(opened.db).issue('views')).id;
  }, 60_000);
  afterAll(async () => opened?.cleanup());

  /** The view's lease ended `agoMs` ago, as if no writer had renewed it since. */
  const lapse = (taskId: string, agoMs = 1000) =>
    opened.db.query("update task_views set fresh_until = now() - $2::double precision * interval '1 millisecond' where task_id = $1", [taskId, agoMs]);

  test('a task never published has no view; a publish leases it for a minute, and a watching step for its heartbeat timeout', async () => {
    const state = task();
    expect(await views.look(state.id)).toEqual({ deleted: false, view: null });
    await views.publish(state, 0);
    expect(await views.look(state.id)).toEqual({ deleted: false, view: { state, fresh: true } });
    const [lease] = await opened.db.query<{ s: number }>('select extract(epoch from fresh_until - now())::float8 as s from task_views where task_id = $1', [
      state.id,
    ]);
    expect(lease!.s).toBeGreaterThan(PUBLISHED_STATE_LEASE_MS / 1000 - 5);
    expect(lease!.s).toBeLessThanOrEqual(PUBLISHED_STATE_LEASE_MS / 1000);
    await lapse(state.id);
    expect(await views.look(state.id)).toEqual({ deleted: false, view: { state, fresh: false } });
    await views.watched(state.id, { status: 'pending', progress: 0 }, 60_000);
    expect(await views.look(state.id)).toEqual({ deleted: false, view: { state, fresh: true } });
  });

  test("a renewal leases only the create's initial view: never one the workflow has published over, never a dropped one", async () => {
    const queued = task();
    await views.publish(queued, 0);
    await lapse(queued.id);
    await views.renewInitial(queued.id);
    expect(await views.look(queued.id)).toEqual({ deleted: false, view: { state: queued, fresh: true } });
    const [lease] = await opened.db.query<{ s: number }>('select extract(epoch from fresh_until - now())::float8 as s from task_views where task_id = $1', [
      queued.id,
    ]);
    expect(lease!.s).toBeGreaterThan(PUBLISHED_STATE_LEASE_MS / 1000 - 5);

    // The workflow published after the describe that led to the renewal: the renewal changes nothing.
    const moved = task();
    await views.publish(moved, 0);
    await views.publish({ ...moved, status: 'processing' }, 1);
    await lapse(moved.id);
    await views.renewInitial(moved.id);
    expect((await views.look(moved.id)).view?.fresh).toBe(false);

    // The sweep of stopped runs dropped the view: it stays gone. Renewals arriving together go as one statement.
    const stopped = task();
    await views.publish(stopped, 0);
    await views.forget([stopped.id]);
    const statements: string[] = [];
    const counted = new TaskViews({ query: (text, params, name) => (statements.push(text), opened.db.query(text, params, name)) }, 30);
    await Promise.all([counted.renewInitial(stopped.id), counted.renewInitial(queued.id), counted.renewInitial(queued.id)]);
    expect(statements.length).toBeLessThanOrEqual(2);
    expect((await views.look(stopped.id)).view).toBeNull();
  });

  test("the watched job's progress is overlaid, never going back, and status only from pending to processing", async () => {
    const state = task();
    await views.publish(state, 1);
    await views.watched(state.id, { status: 'processing', progress: 40 }, 60_000);
    // A report that arrives late (they are not awaited) changes nothing.
    await views.watched(state.id, { status: 'pending', progress: 20 }, 60_000);
    expect((await views.look(state.id)).view).toEqual({ state: { ...state, status: 'processing', progress: 40 }, fresh: true });
    // The workflow's own state at a higher progress wins over the job's.
    await views.publish({ ...state, status: 'processing', progress: 60 }, 2);
    expect((await views.look(state.id)).view?.state).toMatchObject({ status: 'processing', progress: 60 });
  });

  test('an older publish never replaces a newer one, whatever order they arrive in', async () => {
    const state = task();
    await views.publish({ ...state, status: 'processing', progress: 50 }, 5);
    await views.publish(state, 4);
    expect((await views.look(state.id)).view?.state).toMatchObject({ status: 'processing', progress: 50 });
  });

  test('a lease lapses when no report renews it; a terminal state holds whatever the leases', async () => {
    const state = task();
    await views.publish(state, 1);
    await lapse(state.id);
    await views.watched(state.id, { status: 'processing', progress: 10 }, 300);
    expect((await views.look(state.id)).view?.fresh).toBe(true);
    await sleep(400);
    expect((await views.look(state.id)).view).toEqual({ state: { ...state, status: 'processing', progress: 10 }, fresh: false });
    const done: TaskState = { ...state, status: 'completed', progress: 100, video: { key: 'k', contentType: 'video/mp4', bytes: 1 } };
    await views.publish(done, 2);
    // A short lease from a step that reports after the end does not shorten the retention.
    await views.watched(state.id, { status: 'processing', progress: 90 }, 1);
    await sleep(50);
    expect((await views.look(state.id)).view).toEqual({ state: done, fresh: true });
    const [lease] = await opened.db.query<{ days: number }>(
      'select extract(epoch from fresh_until - now())::float8 / 86400 as days from task_views where task_id = $1',
      [state.id],
    );
    expect(lease!.days).toBeGreaterThan(29.9);
  });

  test("the deletion mark comes with the view, and a deleted task's mark is read with no view at all", async () => {
    const shown = task();
    await views.publish(shown, 1);
    await new DeletedTasks(opened.db).mark(shown.id, keyId);
    expect(await views.look(shown.id)).toEqual({ deleted: true, view: { state: shown, fresh: true } });
    const never = task();
    await new DeletedTasks(opened.db).mark(never.id, keyId);
    expect(await views.look(never.id)).toEqual({ deleted: true, view: null });
  });

  test("writes arriving together go as one statement of each kind, keeping each task's newest state and highest progress", async () => {
    const statements: string[] = [];
    const counted = new TaskViews({ query: (text, params, name) => (statements.push(text), opened.db.query(text, params, name)) }, 30);
    const [a, b] = [task(), task()];
    await Promise.all([counted.publish(a, 1), counted.publish(b, 1)]);
    statements.length = 0;
    await Promise.all([
      counted.publish({ ...a, status: 'processing', progress: 30 }, 3),
      counted.publish({ ...a, status: 'processing', progress: 10 }, 2),
      counted.publish({ ...b, status: 'failed', error: { code: 'upstream_failed', message: 'm' } }, 2),
      counted.watched(a.id, { status: 'processing', progress: 45 }, 60_000),
      counted.watched(a.id, { status: 'pending', progress: 40 }, 1),
      counted.watched(b.id, { status: 'processing', progress: 70 }, 60_000),
    ]);
    expect(statements).toHaveLength(2);
    expect((await views.look(a.id)).view).toEqual({ state: { ...a, status: 'processing', progress: 45 }, fresh: true });
    // A terminal state is read as published: the job's progress no longer shows.
    expect((await views.look(b.id)).view?.state).toMatchObject({ status: 'failed', progress: 0 });
  });

  test('forgotten views are gone unless terminal, and later reports do not bring them back; prune removes views a day past their lease', async () => {
    const stopped = task();
    const ended = task();
    const endedState: TaskState = { ...ended, status: 'failed', error: { code: 'cancelled', message: 'cancelled' } };
    await views.publish(stopped, 1);
    await views.publish(endedState, 2);
    await views.watched(stopped.id, { status: 'processing', progress: 30 }, 60_000);
    await views.forget([stopped.id, ended.id]);
    await views.watched(stopped.id, { status: 'processing', progress: 35 }, 60_000);
    expect((await views.look(stopped.id)).view).toBeNull();
    // A run that published its own end (a cancelled task) keeps the view that says so.
    expect((await views.look(ended.id)).view).toEqual({ state: endedState, fresh: true });

    const old = task();
    const recent = task();
    await views.publish(old, 1);
    await views.publish(recent, 1);
    await opened.db.query("update task_views set fresh_until = now() - interval '25 hours' where task_id = $1", [old.id]);
    await opened.db.query("update task_views set fresh_until = now() - interval '23 hours' where task_id = $1", [recent.id]);
    expect(await views.prune()).toBeGreaterThanOrEqual(1);
    expect((await views.look(old.id)).view).toBeNull();
    expect((await views.look(recent.id)).view).not.toBeNull();
  });
});
