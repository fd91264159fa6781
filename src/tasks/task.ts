/**
 * The canonical task: one request shape and one state shape that every endpoint
 * family maps from and to. Pure types and functions only; imported by workflow code.
 */
import type { VideoEndpoint, VideoFamily } from '../catalog/models';

/** The endpoint family a task came through: the two video families, or a chat completion. */
export type TaskEndpoint = VideoEndpoint | 'chat';

export type TaskStatus = 'pending' | 'processing' | 'completed' | 'failed';

export const TERMINAL_STATUSES: readonly TaskStatus[] = ['completed', 'failed'];

/** A reference image: a URL the worker fetches (guarded), or bytes the API already stored. */
export type ImageRef = { kind: 'url'; url: string } | { kind: 'stored'; key: string; mimeType: string; bytes: number };

/** Where a character's clip comes from: a URL (fetched through the guard) or a finished task's stored video. */
export type CharacterSource = ({ kind: 'url'; url: string } | { kind: 'task'; taskId: string; videoKey: string }) & {
  timestamps?: string;
  /** character_create.create_self_portrait: the character is the caller's own likeness. */
  selfPortrait?: boolean;
};

/** Characters already made (`@username` in the prompt), cast on the channel that holds them. */
export interface CastCharacters {
  channel: string;
  characterIds: string[];
}

/** The finished task a remix starts from, and its job at the provider that made it. */
export interface RemixSource {
  taskId: string;
  channel: string;
  jobId: string;
}

export interface TaskRequest {
  taskId: string;
  ownerId: string;
  model: string;
  family: VideoFamily;
  /** The endpoint family that created the task; views of other families still read it. */
  endpoint: TaskEndpoint;
  prompt: string;
  enhancePrompt: boolean;
  enableUpsample: boolean;
  aspectRatio?: '16:9' | '9:16';
  images: ImageRef[];
  /** Output dimensions `WxH`, resolved from orientation/size or given directly. */
  size?: string;
  seconds?: number;
  watermark: boolean;
  private: boolean;
  character?: CharacterSource;
  cast?: CastCharacters;
  /** Motion extensions (/v1/videos): a style preset and the caller's metadata, forwarded to compatible providers. */
  style?: string;
  metadata?: Record<string, unknown>;
  remixOf?: RemixSource;
  /** Unix ms. */
  createdAt: number;
  /** How long the task may take before it fails as timed out. */
  deadlineMs?: number;
  /** Where its completion webhook goes (the request's callback_url), instead of the key's endpoint. */
  callbackUrl?: string;
}

export interface TaskError {
  /** Machine-readable cause: upstream_rejected, upstream_failed, content_filtered, timeout, ... */
  code: string;
  message: string;
}

/** A character: made by its own workflow (id = workflow id), owned by one key. */
export interface CharacterState {
  id: string;
  username: string;
  ownerId: string;
  channel: string;
  upstreamId: string;
  profileKey: string;
  /** Unix seconds. */
  createdAt: number;
}

export interface StoredVideo {
  key: string;
  contentType: string;
  bytes: number;
}

/** A task's submit left a channel for the next one serving its model (README "Video failover"). */
export interface TaskFailover {
  from: string;
  to: string;
  /** Why the submit on `from` was given up: its last error. */
  reason: string;
  /** Unix seconds. */
  at: number;
}

export interface TaskState {
  id: string;
  ownerId: string;
  model: string;
  family: VideoFamily;
  endpoint: TaskEndpoint;
  status: TaskStatus;
  /** 0-100, never decreases. */
  progress: number;
  enhancedPrompt: string;
  size?: string;
  seconds?: number;
  /** Unix seconds. */
  createdAt: number;
  /** Unix seconds of the last status change. */
  statusUpdateTime: number;
  /** The provider's own job id, kept so a failure can be reported to the provider. */
  upstream?: { channel: string; jobId: string };
  /** Channels the submit left, in order; absent when it never failed over. */
  failovers?: TaskFailover[];
  video?: StoredVideo;
  error?: TaskError;
}

export function initialState(req: TaskRequest): TaskState {
  const seconds = Math.floor(req.createdAt / 1000);
  return {
    id: req.taskId,
    ownerId: req.ownerId,
    model: req.model,
    family: req.family,
    endpoint: req.endpoint,
    status: 'pending',
    progress: 0,
    enhancedPrompt: req.prompt,
    size: req.size,
    seconds: req.seconds,
    createdAt: seconds,
    statusUpdateTime: seconds,
  };
}

export function isTerminal(status: TaskStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}
