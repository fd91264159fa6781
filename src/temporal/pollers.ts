import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

export interface Poller {
  identity: string;
  /** When the server last saw a poll from it (ms since the epoch). */
  lastAccessMs: number;
}

/**
 * Who polls a task queue, as the Temporal server sees it: the truest answer to "does a worker
 * serve this queue", because a poll counts only once it reached the server.
 */
export async function taskQueuePollers(
  connection: Connection,
  namespace: string,
  taskQueue: string,
  type: 'workflow' | 'activity',
  deadlineMs = 2000,
): Promise<Poller[]> {
  const res = await connection.withDeadline(Date.now() + deadlineMs, () =>
    connection.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType:
        type === 'workflow' ? temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW : temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    }),
  );
  return (res.pollers ?? []).map((p) => ({
    identity: p.identity ?? '',
    lastAccessMs: Number(p.lastAccessTime?.seconds ?? 0) * 1000 + Math.floor((p.lastAccessTime?.nanos ?? 0) / 1e6),
  }));
}
