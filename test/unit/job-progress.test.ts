import { withJobProgress } from '../../src/tasks/job-progress';
import { initialState, type TaskState } from '../../src/tasks/task';
import { taskRequest } from '../support/task-request';

const running = (patch: Partial<TaskState> = {}): TaskState => ({
  ...initialState(taskRequest({ taskId: 'vidgen3:1-abc', ownerId: 'k', prompt: 'p', createdAt: 1_700_000_000_000 })),
  ...patch,
});

test('the watching step moves a pending task to processing and its progress forward', () => {
  expect(withJobProgress(running(), { status: 'processing', progress: 42 })).toMatchObject({ status: 'processing', progress: 42 });
  expect(withJobProgress(running(), { status: 'pending', progress: 5 })).toMatchObject({ status: 'pending', progress: 5 });
});

test('progress never goes back and a status never returns to pending', () => {
  const state = running({ status: 'processing', progress: 60 });
  expect(withJobProgress(state, { status: 'pending', progress: 30 })).toMatchObject({ status: 'processing', progress: 60 });
});

test('a finished task is never changed by a heartbeat', () => {
  const done = running({ status: 'completed', progress: 100 });
  expect(withJobProgress(done, { status: 'processing', progress: 50 })).toBe(done);
  const failed = running({ status: 'failed', progress: 20 });
  expect(withJobProgress(failed, { status: 'processing', progress: 50 })).toBe(failed);
});

test('details that are not a job progress are ignored', () => {
  const state = running({ progress: 10 });
  for (const details of [
    1048576,
    null,
    undefined,
    'x',
    { status: 'done', progress: 50 },
    { status: 'processing', progress: 100 },
    { status: 'processing', progress: -1 },
  ]) {
    expect(withJobProgress(state, details)).toBe(state);
  }
});
