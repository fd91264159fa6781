import type { TaskError, TaskRequest, TaskState } from '../tasks/task';

export interface ChannelPlan {
  channel: string;
  upstreamModel: string;
  pollMs: number;
  expectedJobMs: number;
  /** Backoff of upstream retries (worker config), first and largest interval. */
  retryInitialMs: number;
  retryMaxMs: number;
}

/** Carried across continue-as-new so a long task keeps its upstream job and progress. */
export interface VideoTaskResume {
  state: TaskState;
  plan: ChannelPlan;
  jobId: string;
  /** Workflow time (ms) when the upstream job was submitted. */
  submittedAt: number;
}

export interface VideoTaskInput {
  request: TaskRequest;
  resume?: VideoTaskResume;
}

export const STATE_QUERY = 'state';

/** Activity failure types the workflow turns into a failed task without retrying. */
export const FAILURE_TYPES = {
  upstreamRejected: 'UpstreamRejected',
  inputRejected: 'InputRejected',
  noChannel: 'NoChannel',
  /** The task's charge is not live (refunded, or none): it may not run or complete. */
  chargeNotLive: 'ChargeNotLive',
} as const;

export type { TaskError };
