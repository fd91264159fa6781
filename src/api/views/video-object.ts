import type { UrlSigner } from '../../files/signed-url';
import type { TaskState, TaskStatus } from '../../tasks/task';
import { failureOf, videoUrlOf } from './video-task';

/** Spec 2.2 views of the canonical TaskState (the /v1/videos family); the shape follows the task's model family. */

export interface VideoObjectCreateView {
  id: string;
  object: 'video';
  model: string;
  status: 'queued' | TaskStatus;
  progress: number;
  created_at: number;
  seconds: number;
  size: string;
}

/** vidgen_3_1 tasks start as `queued` on this endpoint family, motion tasks as `pending` (spec 2.2). */
export function videoObjectCreateView(state: TaskState): VideoObjectCreateView {
  return {
    id: state.id,
    object: 'video',
    model: state.model,
    status: state.family === 'vidgen' && state.status === 'pending' ? 'queued' : state.status,
    progress: state.progress,
    created_at: state.createdAt,
    seconds: state.seconds ?? 0,
    size: state.size ?? '',
  };
}

interface FailureExtension {
  /** Extension: why a failed task failed (absent otherwise). */
  error?: { code: string; message: string };
}

export type VideoStatusView =
  | ({ id: string; status: TaskStatus; progress: number; video_url: string | null; enhanced_prompt: string; status_update_time: number } & FailureExtension)
  | ({ id: string; status: TaskStatus; progress: number; video_url: string | null; model: string; seconds: number; size: string } & FailureExtension);

export function videoStatusView(state: TaskState, signer: UrlSigner): VideoStatusView {
  const common = { id: state.id, status: state.status, progress: state.progress, video_url: videoUrlOf(state, signer) };
  const view: VideoStatusView =
    state.family === 'motion'
      ? { ...common, model: state.model, seconds: state.seconds ?? 0, size: state.size ?? '' }
      : { ...common, enhanced_prompt: state.enhancedPrompt, status_update_time: state.statusUpdateTime };
  const error = failureOf(state);
  if (error) view.error = error;
  return view;
}

/** Spec 2.2 remix response. */
export function videoRemixView(state: TaskState): { id: string; object: 'video'; status: TaskStatus; progress: number } {
  return { id: state.id, object: 'video', status: state.status, progress: state.progress };
}

export interface VideoContentView {
  id: string;
  status: 'completed';
  video_url: string;
  enhanced_prompt: string;
  status_update_time: number;
}

export function videoContentView(state: TaskState & { status: 'completed' }, videoUrl: string): VideoContentView {
  return { id: state.id, status: state.status, video_url: videoUrl, enhanced_prompt: state.enhancedPrompt, status_update_time: state.statusUpdateTime };
}

/**
 * One video of GET /v1/videos: the fields of OpenAI's Video object that the gateway knows, with
 * this gateway's statuses (spec 3) and the task's video_url; `completed_at` is the time of its
 * completion, `error` is set on failed tasks only.
 */
export interface VideoListItemView {
  id: string;
  object: 'video';
  model: string;
  status: TaskStatus;
  progress: number;
  created_at: number;
  completed_at: number | null;
  seconds: number;
  size: string;
  video_url: string | null;
  error: { code: string; message: string } | null;
}

export function videoListItemView(state: TaskState, signer: UrlSigner): VideoListItemView {
  return {
    id: state.id,
    object: 'video',
    model: state.model,
    status: state.status,
    progress: state.progress,
    created_at: state.createdAt,
    completed_at: state.status === 'completed' ? state.statusUpdateTime : null,
    seconds: state.seconds ?? 0,
    size: state.size ?? '',
    video_url: videoUrlOf(state, signer),
    error: failureOf(state),
  };
}

/** DELETE /v1/videos/{id}: the OpenAI SDK's VideoDeleteResponse. */
export function videoDeletedView(state: TaskState): { id: string; object: 'video.deleted'; deleted: true } {
  return { id: state.id, object: 'video.deleted', deleted: true };
}
