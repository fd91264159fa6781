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
import { EventType, eventMillis as millis } from './history';

export const LAG_PHASES = ['stored', 'pickup', 'finish'] as const;
export type LagPhases = Record<(typeof LAG_PHASES)[number], number>;

/** The steps that store the finished file, newest shape first. */
const STORING_STEPS = new Set(['watchVideoJob', 'storeVideo']);

/** The phases of one completed task, or null when its history has no storing step (it did not complete). */
export async function lagPhasesOf(client: Client, taskId: string, upstreamDoneAt: number): Promise<LagPhases | null> {
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
  };
}
