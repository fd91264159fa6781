/**
 * What watching upstream jobs cost, as counts read from the worker's own metrics
 * (METRICS_ADDRESS): heartbeats by reason (each a write on the Temporal server) and upstream
 * video requests (the polls, plus each task's submit and download). Counts stay steady where a
 * shared machine's CPU figures move by 20 %.
 */
import { JOB_HEARTBEAT_REASONS as HEARTBEAT_REASONS, type JobHeartbeatReason as HeartbeatReason } from '../src/activities/watch-job';
import { scrape, sumOf } from '../test/support/prometheus';

export interface WatchCounts {
  heartbeats: Record<HeartbeatReason, number>;
  upstreamVideoRequests: number;
}

/** A figure for each heartbeat reason. */
function byReason(figure: (reason: HeartbeatReason) => number): Record<HeartbeatReason, number> {
  return Object.fromEntries(HEARTBEAT_REASONS.map((r) => [r, figure(r)])) as Record<HeartbeatReason, number>;
}

export async function watchCounts(metricsUrl: string): Promise<WatchCounts> {
  const samples = await scrape(metricsUrl);
  return {
    heartbeats: byReason((reason) => sumOf(samples, 'gateway_job_heartbeats_total', { reason })),
    upstreamVideoRequests: sumOf(samples, 'gateway_upstream_requests_total', { kind: 'video' }),
  };
}

/** The counts between two readings, per task. */
export function watchCountsPerTask(before: WatchCounts, after: WatchCounts, tasks: number): WatchCounts {
  const per = (a: number, b: number) => (b - a) / tasks;
  return {
    heartbeats: byReason((r) => per(before.heartbeats[r], after.heartbeats[r])),
    upstreamVideoRequests: per(before.upstreamVideoRequests, after.upstreamVideoRequests),
  };
}

export function formatWatchCounts(c: WatchCounts): string {
  const total = HEARTBEAT_REASONS.reduce((a, r) => a + c.heartbeats[r], 0);
  return (
    `heartbeats ${total.toFixed(1)} (${HEARTBEAT_REASONS.map((r) => `${r} ${c.heartbeats[r].toFixed(1)}`).join(', ')}), ` +
    `upstream video requests ${c.upstreamVideoRequests.toFixed(1)} (the polls, the submit and the download)`
  );
}
