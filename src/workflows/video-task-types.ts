import type { StoredVideo, TaskError, TaskRequest, TaskState } from '../tasks/task';

export interface ChannelPlan {
  channel: string;
  upstreamModel: string;
  pollMs: number;
  expectedJobMs: number;
  /** Backoff of upstream retries (worker config), first and largest interval. */
  retryInitialMs: number;
  retryMaxMs: number;
  /** Submit attempts on this channel before failing over (absent in plans recorded before failover). */
  submitAttempts?: number;
}

/** planChannel's answer: the channel to submit to, and the next ones serving the model, in failover order. */
export interface PlannedChannels extends ChannelPlan {
  /** Absent in histories recorded before failover, and empty for a task pinned to its channel. */
  fallbacks?: ChannelPlan[];
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
  /**
   * The longest the run's first workflow task may have waited for a worker and still make the
   * submit's first attempt inside it (videoTaskWorkflowV3); null: however long it waited. Set by
   * the API (SUBMIT_FIRST_TRY_MAX_WAIT_MS); absent in runs started before it was, which keep
   * FIRST_TASK_PROMPT_MS. In the input, so a run's replay decides as its first execution did.
   */
  firstTryMaxWaitMs?: number | null;
}

export const STATE_QUERY = 'state';

/** The activity that watches an upstream job to its end; status reads look for it by this name. */
export const WATCH_JOB_ACTIVITY = 'watchVideoJob';

/**
 * Where a watched job stands: the heartbeat details of the watching step. Status reads
 * overlay it on the memo (the server holds both), so progress is shown without a history event.
 */
export interface JobProgress {
  status: 'pending' | 'processing';
  progress: number;
}

/** A stored video, and whether the step that stored it also settled the task's charge. */
export type StoredVideoResult = StoredVideo & { chargeSettled?: true };

export interface WatchJobInput {
  taskId: string;
  channel: string;
  jobId: string;
  pollMs: number;
  expectedJobMs: number;
  /** Workflow time (ms) of the submit, for the progress estimate of providers that report none. */
  submittedAt: number;
  /** Unix ms after which the task fails as timed out. */
  deadline: number;
  /** Where the task stood when the step was scheduled; a retried attempt resumes from its last heartbeat. */
  from: JobProgress;
}

/** How a watched job ended: its file stored, failed at the provider, or past the task's deadline; `last` is where it was last seen. */
export type WatchJobResult = ({ phase: 'stored'; video: StoredVideoResult } | { phase: 'failed'; error: TaskError } | { phase: 'timeout' }) & {
  last: JobProgress;
};

/** Activity failure types the workflow turns into a failed task without retrying. */
export const FAILURE_TYPES = {
  upstreamRejected: 'UpstreamRejected',
  inputRejected: 'InputRejected',
  noChannel: 'NoChannel',
  /** The task's charge is not live (refunded, or none): it may not run or complete. */
  chargeNotLive: 'ChargeNotLive',
} as const;

export type { TaskError };

/**
 * Retryable failure types of a submit attempt (src/providers/submit-outcome.ts): whether the
 * provider surely took no job, or may have. Only the first lets a task fail over.
 */
export const SUBMIT_FAILURE_TYPES = {
  notAccepted: 'SubmitNotAccepted',
  outcomeUnknown: 'SubmitOutcomeUnknown',
} as const;
