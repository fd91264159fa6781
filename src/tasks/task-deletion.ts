/**
 * Deleting a video task (DELETE /v1/videos/{id}), whichever family made it.
 *
 * - A task still running is cancelled first: its workflow refunds the charge (once, however the
 *   reconciler races it), asks the provider to cancel the job where the provider's protocol has
 *   a call for it, removes any file it stored, and ends as cancelled (workflows/video-task.ts).
 *   The answer does not wait for that: the refund follows within a workflow task.
 * - Its stored files (the video, the uploaded inputs) are removed.
 * - It is marked deleted in the store (deleted-tasks.ts), which every read on every replica
 *   checks: from then on it is a 404 everywhere and the list skips it.
 * - A finished task's workflow execution is then deleted from Temporal in the background, once
 *   its charge is settled (best-effort: retention removes it anyway).
 *
 * In this order because each step can fail: a mark written before the cancel landed would hide
 * a task that goes on running (and is charged for); files removed before the mark leave, when
 * the mark fails, a task that reads as before with its file gone, and a retried delete finishes.
 */
import type { Logger } from 'pino';
import type { ChargeState } from '../billing/charge-lifecycle';
import { storageKeys, type BlobStore } from '../files/blob-store';
import type { DeletedTasks } from './deleted-tasks';
import { isTerminal, type TaskState } from './task';
import type { TaskService } from './task-service';

/** Charges in these states are settled: their workflow's history is no longer needed by billing. */
const SETTLED: readonly (ChargeState | 'missing')[] = ['completed', 'refunded'];

export class TaskDeletion {
  constructor(
    private readonly tasks: Pick<TaskService, 'cancel' | 'deleteExecution'>,
    private readonly marks: Pick<DeletedTasks, 'mark'>,
    private readonly charges: { chargeState(taskId: string): Promise<ChargeState | 'missing'> },
    private readonly blobs: Pick<BlobStore, 'remove' | 'removeAll'>,
  ) {}

  /**
   * Deletes the task, read as its owner's. 'already-deleted' when another delete marked it first
   * (the route answers that with the 404 of a task that is gone).
   */
  async delete(task: TaskState, log: Logger): Promise<{ outcome: 'deleted' | 'already-deleted'; cancelled: boolean }> {
    const cancelled = !isTerminal(task.status) && (await this.tasks.cancel(task.id)) === 'requested';
    await Promise.all([
      this.blobs.remove(storageKeys.video(task.id)),
      task.video && task.video.key !== storageKeys.video(task.id) ? this.blobs.remove(task.video.key) : undefined,
      this.blobs.removeAll(storageKeys.inputs(task.id)),
    ]);
    if (!(await this.marks.mark(task.id, task.ownerId))) return { outcome: 'already-deleted', cancelled };
    log.info({ taskId: task.id, cancelled }, 'task deleted');
    // A cancelled run still has its refund to make: its execution stays until retention removes it.
    if (!cancelled) void this.forgetExecution(task.id, log);
    return { outcome: 'deleted', cancelled };
  }

  private async forgetExecution(taskId: string, log: Logger): Promise<void> {
    try {
      // A run stopped from outside whose charge the reconciler has yet to refund is found through
      // its execution: that one stays.
      if (!SETTLED.includes(await this.charges.chargeState(taskId))) return;
      await this.tasks.deleteExecution(taskId);
    } catch (err) {
      log.warn({ taskId, err: (err as Error).message }, "a deleted task's workflow execution could not be deleted; retention removes it");
    }
  }
}
