/**
 * The deletion marks of video tasks on both stores: a task is marked once (of racing deletes,
 * exactly one marks it), a mark is seen by every reader of the store, and the key's list skips
 * a marked task while a marked task still serves as a page's cursor.
 */
import { DeletedTasks } from '../../src/tasks/deleted-tasks';
import { TaskViews } from '../../src/tasks/task-views';
import { TaskList } from '../../src/tasks/task-list';
import type { TaskService } from '../../src/tasks/task-service';
import { initialState } from '../../src/tasks/task';
import { KeyStore } from '../../src/store/keys';
import { migrate } from '../../src/store/migrations';
import { BOTH_STORES, type OpenedStore } from '../support/stores';
import { taskRequest } from '../support/task-request';

describe.each(BOTH_STORES)('%s', (_name, open) => {
  let opened: OpenedStore;
  let keyId: string;
  beforeAll(async () => {
    opened = await open();
    await migrate(opened.db);
    keyId = (await new KeyStore(opened.db).issue('deletes')).id;
  }, 60_000);
  afterAll(async () => opened?.cleanup());

  test('of ten racing deletes of one task exactly one marks it, and every reader sees the mark', async () => {
    const marks = new TaskViews(opened.db, 30);
    const marked = await Promise.all(Array.from({ length: 10 }, () => new DeletedTasks(opened.db).mark('vidgen3:1-race', keyId)));
    expect(marked.filter(Boolean)).toHaveLength(1);
    expect((await marks.look('vidgen3:1-race')).deleted).toBe(true);
    expect((await new TaskViews(opened.db, 30).look('vidgen3:1-race')).deleted).toBe(true);
    expect((await marks.look('vidgen3:2-kept')).deleted).toBe(false);
  });

  test("the key's list skips a deleted task, which still serves as a cursor", async () => {
    const ids = ['video_a', 'video_b', 'video_c'];
    for (const [i, id] of ids.entries()) {
      await opened.db.query(
        `insert into billed_tasks (task_id, key_id, kind, model, amount, state, created_at) values ($1, $2, 'video', 'motion-2', 0, 'completed', now() + $3 * interval '1 second')`,
        [id, keyId, i],
      );
    }
    await new DeletedTasks(opened.db).mark('video_b', keyId);
    // Every task reads as there: the list's skipping is the store's doing.
    const tasks = {
      get: async (id: string, ownerId: string) => ({
        ...initialState(taskRequest({ taskId: id, ownerId, model: 'motion-2', family: 'motion', endpoint: 'videos', prompt: 'p', createdAt: 0 })),
      }),
    } as unknown as TaskService;
    const list = new TaskList(opened.db, tasks);
    expect((await list.page(keyId, { limit: 10, order: 'asc' })).tasks.map((t) => t.state.id)).toEqual(['video_a', 'video_c']);
    expect((await list.page(keyId, { limit: 10, order: 'asc', after: 'video_b' })).tasks.map((t) => t.state.id)).toEqual(['video_c']);
    const first = await list.page(keyId, { limit: 1, order: 'desc' });
    expect(first).toMatchObject({ hasMore: true, lastId: 'video_c' });
    expect((await list.page(keyId, { limit: 1, order: 'desc', after: first.lastId! })).tasks.map((t) => t.state.id)).toEqual(['video_a']);
  });
});
