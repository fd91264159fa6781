/**
 * The worker's side of the workflows' `taskViews` sink (workflows/task-view-sink.ts): each
 * published state is written to the task's view before the workflow task completes, so a view is
 * never behind the memo the same workflow task writes. The write is bounded, so a store that hangs
 * delays a workflow task by PUBLISH_WAIT_MS at most; a view a publish missed is dropped (or, the
 * store being away, cannot be read either), so reads ask Temporal rather than show it stale.
 */
import type { InjectedSinks } from '@temporalio/worker';
import type { Logger } from 'pino';
import { metrics } from '../metrics/metrics';
import type { TaskViews } from '../tasks/task-views';
import type { TaskViewSinks } from '../workflows/task-view-sink';
import { withTimeout } from '../system/with-timeout';

const PUBLISH_WAIT_MS = 2_000;

export function taskViewSinks(views: Pick<TaskViews, 'publish' | 'forget'>, logger: Logger): InjectedSinks<TaskViewSinks> {
  return {
    taskViews: {
      publish: {
        fn: async (info, state, seq) => {
          try {
            await withTimeout(views.publish(state, seq), PUBLISH_WAIT_MS, `the store did not answer within ${PUBLISH_WAIT_MS} ms`);
            metrics.taskViewWrites.inc({ writer: 'workflow', outcome: 'ok' });
          } catch (err) {
            metrics.taskViewWrites.inc({ writer: 'workflow', outcome: 'failed' });
            logger.warn({ taskId: info.workflowId, err: (err as Error).message }, "a task's state could not be written to its view; its reads ask Temporal");
            views.forget([info.workflowId]).catch(() => undefined);
          }
        },
        callDuringReplay: false,
      },
    },
  };
}
