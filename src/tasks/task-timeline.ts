/**
 * What happened to a video task, for GET /v1/videos/{id}/timeline: read from its workflow's
 * history (which Temporal keeps and serves with no worker running) and from the ledger (the
 * charge is taken before the workflow starts, the refund by a step of it). Only the domain's
 * events are shown, never the steps' inputs or outputs (prompts, keys, file bytes).
 */
import type { temporal } from '@temporalio/proto';
import type { PayloadConverter } from '@temporalio/common';
import type { Db } from '../store/db';
import { SA_STATUS } from '../temporal/search-attributes';
import { WATCH_JOB_ACTIVITY } from '../workflows/video-task-types';

export type TimelineEventName = 'created' | 'charged' | 'failover' | 'submitted' | 'processing' | 'stored' | 'completed' | 'failed' | 'refunded' | 'cancelled';

export interface TimelineEvent {
  /** Unix seconds. */
  at: number;
  event: TimelineEventName;
  detail: string | null;
}

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The ledger's movements of one task (its charge and refund). */
export interface TaskLedgerRow {
  kind: 'charge' | 'refund';
  amount: number;
  reason: string;
  at: number;
}

const SUBMIT_ACTIVITIES: ReadonlySet<string> = new Set(['submitVideo', 'submitRemix']);
const STORE_ACTIVITIES: ReadonlySet<string> = new Set(['storeVideo', WATCH_JOB_ACTIVITY]);

/** Seconds of a history event's time (a protobuf Timestamp whose seconds may be a Long). */
function secondsOf(event: HistoryEvent): number {
  const seconds = event.eventTime?.seconds;
  return seconds === undefined || seconds === null ? 0 : Number(seconds.toString());
}

function decode(converter: PayloadConverter, payload: temporal.api.common.v1.IPayload | null | undefined): unknown {
  if (!payload) return undefined;
  try {
    return converter.fromPayload(payload);
  } catch {
    return undefined;
  }
}

/** The `phase` and `status` fields of a decoded step result or workflow result, when it has them. */
function field(value: unknown, name: string): unknown {
  return value && typeof value === 'object' ? (value as Record<string, unknown>)[name] : undefined;
}

/** "from -> to: reason" of a failover in the memo's state. */
function failoverDetail(f: unknown): string {
  const text = (name: string) => {
    const v = field(f, name);
    return typeof v === 'string' ? v : '?';
  };
  return `${text('from')} -> ${text('to')}: ${text('reason')}`;
}

/**
 * The `last` of the newest step result among `newestFirst` (a page of history read newest
 * first): where a watching step last saw its job. null when the newest step result is another
 * step's, or there is none on the page.
 */
export function lastWatchedProgress(newestFirst: readonly HistoryEvent[], converter: PayloadConverter): unknown {
  const completed = newestFirst.find((e) => e.activityTaskCompletedEventAttributes)?.activityTaskCompletedEventAttributes;
  return field(decode(converter, completed?.result?.payloads?.[0]), 'last') ?? null;
}

/**
 * The domain events of one run's history plus the task's ledger rows, in time order (ties keep
 * the order events happen in: created, charged, submitted, ...). Pure: the route test and the
 * e2e test feed it real histories.
 */
export function timelineOf(events: readonly HistoryEvent[], ledger: readonly TaskLedgerRow[], converter: PayloadConverter): TimelineEvent[] {
  const out: TimelineEvent[] = [];
  const scheduled = new Map<string, string>();
  let processingSeen = false;
  let failoversSeen = 0;
  for (const e of events) {
    const at = secondsOf(e);
    if (e.workflowExecutionStartedEventAttributes) {
      // A run continued from an earlier one is the same task going on, not a new creation.
      if (!e.workflowExecutionStartedEventAttributes.continuedExecutionRunId) out.push({ at, event: 'created', detail: null });
    } else if (e.activityTaskScheduledEventAttributes) {
      scheduled.set(String(e.eventId), e.activityTaskScheduledEventAttributes.activityType?.name ?? '');
    } else if (e.activityTaskCompletedEventAttributes) {
      const name = scheduled.get(String(e.activityTaskCompletedEventAttributes.scheduledEventId)) ?? '';
      const result = decode(converter, e.activityTaskCompletedEventAttributes.result?.payloads?.[0]);
      if (SUBMIT_ACTIVITIES.has(name)) out.push({ at, event: 'submitted', detail: null });
      else if (STORE_ACTIVITIES.has(name) && (name === 'storeVideo' || field(result, 'phase') === 'stored')) out.push({ at, event: 'stored', detail: null });
    } else if (e.markerRecordedEventAttributes) {
      // A step run in the workflow task (a submit's first attempt): a marker that names it, with no failure when it succeeded.
      const marker = e.markerRecordedEventAttributes;
      const type = field(decode(converter, marker.details?.data?.payloads?.[0]), 'activity_type');
      if (!marker.failure && typeof type === 'string' && SUBMIT_ACTIVITIES.has(type)) out.push({ at, event: 'submitted', detail: null });
    } else if (e.workflowPropertiesModifiedEventAttributes) {
      // A submit that left its channel: the memo's state lists it (submit-failover.ts).
      const failovers = field(decode(converter, e.workflowPropertiesModifiedEventAttributes.upsertedMemo?.fields?.state), 'failovers');
      if (Array.isArray(failovers)) {
        for (const f of failovers.slice(failoversSeen)) out.push({ at, event: 'failover', detail: failoverDetail(f) });
        failoversSeen = Math.max(failoversSeen, failovers.length);
      }
    } else if (e.upsertWorkflowSearchAttributesEventAttributes) {
      const status = decode(converter, e.upsertWorkflowSearchAttributesEventAttributes.searchAttributes?.indexedFields?.[SA_STATUS.name]);
      const value = Array.isArray(status) ? status[0] : status;
      if (value === 'processing' && !processingSeen) {
        processingSeen = true;
        out.push({ at, event: 'processing', detail: null });
      }
    } else if (e.workflowExecutionCompletedEventAttributes) {
      const state = decode(converter, e.workflowExecutionCompletedEventAttributes.result?.payloads?.[0]);
      if (field(state, 'status') === 'completed') out.push({ at, event: 'completed', detail: null });
      else if (field(state, 'status') === 'failed') {
        const error = field(state, 'error');
        const code = field(error, 'code');
        const message = field(error, 'message');
        out.push({ at, event: code === 'cancelled' ? 'cancelled' : 'failed', detail: typeof message === 'string' ? message : null });
      }
    } else if (e.workflowExecutionCanceledEventAttributes) {
      out.push({ at, event: 'cancelled', detail: null });
    } else if (e.workflowExecutionFailedEventAttributes) {
      out.push({ at, event: 'failed', detail: e.workflowExecutionFailedEventAttributes.failure?.message ?? null });
    } else if (e.workflowExecutionTerminatedEventAttributes) {
      out.push({
        at,
        event: 'failed',
        detail: `terminated${e.workflowExecutionTerminatedEventAttributes.reason ? `: ${e.workflowExecutionTerminatedEventAttributes.reason}` : ''}`,
      });
    } else if (e.workflowExecutionTimedOutEventAttributes) {
      out.push({ at, event: 'failed', detail: 'the workflow timed out' });
    }
  }
  for (const row of ledger) {
    out.push(
      row.kind === 'charge'
        ? { at: row.at, event: 'charged', detail: `${-row.amount} credits` }
        : { at: row.at, event: 'refunded', detail: `${row.amount} credits: ${row.reason}` },
    );
  }
  const order: Record<TimelineEventName, number> = {
    charged: 0,
    created: 1,
    failover: 2,
    submitted: 2,
    processing: 3,
    stored: 4,
    completed: 5,
    failed: 5,
    cancelled: 5,
    refunded: 6,
  };
  // Stable: events of the same second keep their causal order.
  return out.sort((a, b) => a.at - b.at || order[a.event] - order[b.event]);
}

/** The task's charge and refund, from the ledger. */
export async function taskLedger(db: Db, taskId: string, keyId: string): Promise<TaskLedgerRow[]> {
  const rows = await db.query<{ kind: 'charge' | 'refund'; amount: string | number; reason: string; created_at: Date | string }>(
    "select kind, amount, reason, created_at from ledger_entries where ref = $1 and key_id = $2 and kind in ('charge', 'refund') order by id",
    [taskId, keyId],
  );
  return rows.map((r) => ({ kind: r.kind, amount: Number(r.amount), reason: r.reason, at: Math.floor(new Date(r.created_at).getTime() / 1000) }));
}
