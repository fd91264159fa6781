/**
 * Where the completion lag of a bench run goes, from the tasks' workflow histories: a lag
 * that grows is split into the phase that grew instead of guessed at.
 *   detect  upstream job done -> the workflow scheduled storeVideo (poll interval, workflow
 *           task queueing, the poll itself)
 *   queue   storeVideo scheduled -> started (activity task queueing)
 *   store   storeVideo started -> completed (download and write)
 *   pickup  storeVideo completed -> the next workflow task started (workflow task queueing)
 *   finish  that workflow task started -> workflow completed (its run: settling, completion)
 */
import type { Client } from '@temporalio/client';
import { EventType, eventMillis as millis } from './history';

export const LAG_PHASES = ['detect', 'queue', 'store', 'pickup', 'finish'] as const;
export type LagPhases = Record<(typeof LAG_PHASES)[number], number>;

/** The phases of one completed task, or null when its history has no storeVideo (it did not complete). */
export async function lagPhasesOf(client: Client, taskId: string, upstreamDoneAt: number): Promise<LagPhases | null> {
  const events = (await client.workflow.getHandle(taskId).fetchHistory()).events ?? [];
  const scheduled = [...events]
    .reverse()
    .find((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED && e.activityTaskScheduledEventAttributes?.activityType?.name === 'storeVideo');
  if (!scheduled) return null;
  const sid = Number(scheduled.eventId);
  const started = events.find(
    (e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED && Number(e.activityTaskStartedEventAttributes?.scheduledEventId) === sid,
  );
  const completed = events.find(
    (e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED && Number(e.activityTaskCompletedEventAttributes?.scheduledEventId) === sid,
  );
  const closed = events.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
  const lastTask = [...events].reverse().find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED);
  if (!started || !completed || !closed || !lastTask) return null;
  return {
    detect: millis(scheduled) - upstreamDoneAt,
    queue: millis(started) - millis(scheduled),
    store: millis(completed) - millis(started),
    pickup: millis(lastTask) - millis(completed),
    finish: millis(closed) - millis(lastTask),
  };
}
