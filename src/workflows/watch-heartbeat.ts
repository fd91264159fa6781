/**
 * The heartbeat timeout of the watching step (activities/watch-job.ts), which also sets how
 * often it says it is alive: once per half timeout when no change of status or progress went
 * out meanwhile. Each heartbeat is a write on the Temporal server, so a timeout fixed in time
 * would make a task's cost grow with its job's length (a 20-minute job at a 10 s poll: one
 * every 25 s, about 48). Scaled to the job's expected length, a job that ends when expected
 * sends about as many heartbeats whatever that length, and its progress steps (one per ten
 * points) carry most of them.
 *
 * The price is how soon a lost worker is noticed: within the timeout, a quarter of the job's
 * expected length at most WATCH_HEARTBEAT_MAX_MS, or two poll intervals and half a minute if
 * that is longer. The upstream job goes on meanwhile; the next attempt resumes from the last
 * heartbeat. Pure, so the workflow computes it deterministically.
 */
import type { ChannelPlan } from './video-task-types';

/** The longest a lost worker may go unnoticed while it watched a job. */
export const WATCH_HEARTBEAT_MAX_MS = 10 * 60 * 1000;

/**
 * The least heartbeat timeout of a step that polls every `pollMs`: two poll intervals and half a
 * minute, so a slow poll (20 s at most) is never taken for a lost worker. Also the background
 * response's watching step's (background-response.ts), whose length nothing predicts.
 */
export function pollingStepHeartbeatTimeoutMs(pollMs: number): number {
  return 2 * pollMs + 30_000;
}

/** A quarter of the job's expected length, at most WATCH_HEARTBEAT_MAX_MS, and never below the polling step's least. */
export function watchHeartbeatTimeoutMs(plan: Pick<ChannelPlan, 'pollMs' | 'expectedJobMs'>): number {
  return Math.max(pollingStepHeartbeatTimeoutMs(plan.pollMs), Math.min(Math.floor(plan.expectedJobMs / 4), WATCH_HEARTBEAT_MAX_MS));
}
