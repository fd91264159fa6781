/** Reading workflow histories in the bench: event types and event times in ms. */
import { temporal as proto } from '@temporalio/proto';

export const EventType = proto.api.enums.v1.EventType;
export type HistoryEvent = proto.api.history.v1.IHistoryEvent;

/** The event's time, ms since the epoch. */
export const eventMillis = (e: HistoryEvent): number => Number(e.eventTime?.seconds ?? 0) * 1000 + Math.floor((e.eventTime?.nanos ?? 0) / 1e6);
