import { isTaskIdShape } from '../catalog/task-id';
import type { TaskService } from '../tasks/task-service';
import type { StoredVideo, TaskState } from '../tasks/task';
import { ConflictError, NotFoundError } from './errors';

/** A task of this key by id; an unknown, malformed or foreign id is the same 404. */
export async function ownTask(tasks: TaskService, id: string | undefined, ownerId: string, param = 'id'): Promise<TaskState> {
  const state = id && isTaskIdShape(id) ? await tasks.get(id, ownerId) : null;
  if (!state) throw new NotFoundError('No task found with that id.', param);
  return state;
}

/** A completed task of this key and its stored video: the source of a character. */
export async function finishedVideoOf(tasks: TaskService, id: string, ownerId: string, param: string): Promise<{ task: TaskState; video: StoredVideo }> {
  const task = await ownTask(tasks, id, ownerId, param);
  if (task.status !== 'completed' || !task.video) {
    throw new ConflictError(`A character can be made only from a completed task; this one is ${task.status}.`, param, 'invalid_task_state');
  }
  return { task, video: task.video };
}
