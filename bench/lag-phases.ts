/**
 * Where the completion lag of a bench run goes, from the tasks' workflow histories: a lag
 * that grows is split into the phase that grew instead of guessed at.
 *   stored  upstream job done -> the step that stores the file completed (the poll interval,
 *           the poll, the download and write: watchVideoJob, or storeVideo in the histories
 *           of builds that polled from the workflow)
 *   pickup  that step completed -> the next workflow task started (workflow task queueing)
 *   finish  that workflow task started -> workflow completed (its run: settling, completion)
 */
import type { Client } from '@temporalio/client';
import { EventType, eventMillis as millis, type HistoryEvent } from './history';

export const LAG_PHASES = ['stored', 'pickup', 'finish'] as const;
export type LagPhases = Record<(typeof LAG_PHASES)[number], number>;

/** The steps that store the finished file, newest shape first. */
const STORING_STEPS = new Set(['watchVideoJob', 'storeVideo']);

/**
 * How long a task's first workflow task waited for a worker (its run started -> that workflow
 * task started): the wait that decides whether the submit's first attempt runs inside it
 * (SUBMIT_FIRST_TRY_MAX_WAIT_MS).
 */
function firstTaskWaitMs(events: HistoryEvent[]): number | null {
  const started = events.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED);
  const firstTask = events.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED);
  return started && firstTask ? millis(firstTask) - millis(started) : null;
}

/**
 * The phases of one completed task, or null when its history has no storing step (it did not
 * complete); with its first workflow task's wait for a worker.
 */
export async function lagPhasesOf(client: Client, taskId: string, upstreamDoneAt: number): Promise<(LagPhases & { firstTaskWait: number | null }) | null> {
  const events = (await client.workflow.getHandle(taskId).fetchHistory()).events ?? [];
  const scheduled = [...events]
    .reverse()
    .find(
      (e) =>
        e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED && STORING_STEPS.has(e.activityTaskScheduledEventAttributes?.activityType?.name ?? ''),
    );
  if (!scheduled) return null;
  const sid = Number(scheduled.eventId);
  const completed = events.find(
    (e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED && Number(e.activityTaskCompletedEventAttributes?.scheduledEventId) === sid,
  );
  const closed = events.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
  const lastTask = [...events].reverse().find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED);
  if (!completed || !closed || !lastTask) return null;
  return {
    stored: millis(completed) - upstreamDoneAt,
    pickup: millis(lastTask) - millis(completed),
    finish: millis(closed) - millis(lastTask),
    firstTaskWait: firstTaskWaitMs(events),
  };
}
