/**
 * The history of the slowest task of a bench run, as a timeline relative to the moment its
 * upstream job finished: where a task that finished late spent its time (a workflow task that
 * timed out, a retry that waited, a slow activity) without opening the Web UI, which the
 * bench's dev server takes down with it.
 */
import type { Client } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { EventType, eventMillis } from './history';

export async function slowTaskTimeline(client: Client, taskId: string, upstreamDoneAt: number): Promise<string[]> {
  const history = await client.workflow.getHandle(taskId).fetchHistory();
  return (history.events ?? []).map((e) => {
    const at = eventMillis(e);
    const type = (EventType[e.eventType ?? 0] ?? String(e.eventType)).replace(/^EVENT_TYPE_/, '');
    const detail =
      e.activityTaskScheduledEventAttributes?.activityType?.name ??
      e.markerRecordedEventAttributes?.markerName ??
      e.activityTaskFailedEventAttributes?.failure?.message ??
      e.activityTaskTimedOutEventAttributes?.failure?.message ??
      (e.workflowTaskTimedOutEventAttributes ? timeoutTypeName(e.workflowTaskTimedOutEventAttributes.timeoutType) : undefined) ??
      e.workflowTaskFailedEventAttributes?.failure?.message ??
      '';
    const rel = ((at - upstreamDoneAt) / 1000).toFixed(2).padStart(8);
    return `${rel} s  #${e.eventId}  ${type}${detail ? `  ${detail}` : ''}`;
  });
}

function timeoutTypeName(t: number | null | undefined): string {
  return (proto.api.enums.v1.TimeoutType[t ?? 0] ?? String(t)).replace(/^TIMEOUT_TYPE_/, '');
}
