import type { UrlSigner } from '../../files/signed-url';
import type { TaskState } from '../../tasks/task';

/** Spec 2.1 views of the canonical TaskState (the /v1/video/* family). */
export interface VideoCreateView {
  id: string;
  status: TaskState['status'];
  status_update_time: number;
  enhanced_prompt: string;
}

export interface VideoQueryView extends VideoCreateView {
  video_url: string | null;
  /** Extension: why a failed task failed (absent otherwise). */
  error?: { code: string; message: string };
}

export function videoCreateView(state: TaskState): VideoCreateView {
  return { id: state.id, status: state.status, status_update_time: state.statusUpdateTime, enhanced_prompt: state.enhancedPrompt };
}

/** The task's error as views show it (the extension field `error`): a failed task's code and message, else null. */
export function failureOf(state: TaskState): { code: string; message: string } | null {
  return state.status === 'failed' && state.error ? { code: state.error.code, message: state.error.message } : null;
}

/** video_url is a fresh signed gateway link, and only for a completed task (spec section 3). */
export function videoUrlOf(state: TaskState, signer: UrlSigner): string | null {
  return state.status === 'completed' && state.video ? signer.sign(state.video.key) : null;
}

export function videoQueryView(state: TaskState, signer: UrlSigner): VideoQueryView {
  const view: VideoQueryView = {
    id: state.id,
    status: state.status,
    video_url: videoUrlOf(state, signer),
    enhanced_prompt: state.enhancedPrompt,
    status_update_time: state.statusUpdateTime,
  };
  const error = failureOf(state);
  if (error) view.error = error;
  return view;
}

/** Operators' view of where a task runs: the channel that accepted its job, and the channels its submit left (README "Video failover"). */
export function upstreamView(state: TaskState): {
  channel: string | null;
  upstream_job_id: string | null;
  failovers: { from: string; to: string; reason: string; at: number }[];
} {
  return {
    channel: state.upstream?.channel ?? null,
    // What an operator quotes to the provider about a failed job.
    upstream_job_id: state.upstream?.jobId ?? null,
    failovers: (state.failovers ?? []).map((f) => ({ from: f.from, to: f.to, reason: f.reason, at: f.at })),
  };
}
