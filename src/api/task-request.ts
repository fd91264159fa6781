import type { ParameterizedContext } from 'koa';
import type { VideoModel } from '../catalog/models';
import type { Config } from '../config/env';
import type { BlobStore } from '../files/blob-store';
import type { PaidTasks } from '../tasks/paid-tasks';
import type { TaskService } from '../tasks/task-service';
import { callerKey, type GatewayState } from './context';
import { idempotentCreate, type IdempotencyDeps } from './idempotency';
import { removeStoredInputs } from './reference-images';
import type { CharacterSource, ImageRef, TaskRequest, TaskState } from '../tasks/task';

/** The longest a plain create takes (a charge and a workflow start): a repeat waits this long before taking over. */
export const CREATE_LEASE_SECONDS = 30;
/** A create that makes a character first (up to two minutes) before its task. */
export const CHARACTER_CREATE_LEASE_SECONDS = 180;

/**
 * A plain task create under the request's Idempotency-Key (idempotency.ts): a repeat answers
 * the task the first one made, read as the caller's.
 */
export function createTaskOnce(
  ctx: ParameterizedContext<GatewayState>,
  deps: IdempotencyDeps & { tasks: TaskService },
  op: { fingerprint: unknown; newTaskId: () => string; create: (taskId: string) => Promise<TaskState> },
): Promise<TaskState> {
  const ownerId = callerKey(ctx.state).id;
  return idempotentCreate(ctx, deps, {
    fingerprint: op.fingerprint,
    fresh: () => ({ taskId: op.newTaskId() }),
    leaseSeconds: CREATE_LEASE_SECONDS,
    existing: (ids) => deps.tasks.get(ids.taskId, ownerId),
    create: (ids) => op.create(ids.taskId),
  });
}

/** The parts of a canonical request that differ between the endpoint families. */
export interface TaskRequestParts {
  taskId: string;
  ownerId: string;
  model: VideoModel;
  endpoint: TaskRequest['endpoint'];
  prompt: string;
  images: ImageRef[];
  enhancePrompt?: boolean;
  enableUpsample?: boolean;
  aspectRatio?: TaskRequest['aspectRatio'];
  size?: string;
  seconds?: number;
  watermark?: boolean;
  private?: boolean;
  character?: CharacterSource;
  style?: string;
  metadata?: Record<string, unknown>;
  remixOf?: TaskRequest['remixOf'];
  cast?: TaskRequest['cast'];
  callbackUrl?: string;
}

/**
 * Charges and starts the task; when either is refused (402, 429, Temporal unreachable), the
 * inputs already stored for it are removed, so a refused request leaves nothing behind.
 */
export async function startTask(paid: PaidTasks, blobs: BlobStore, request: TaskRequest): Promise<TaskState> {
  try {
    return await paid.start(request);
  } catch (err) {
    await removeStoredInputs(blobs, request.images);
    throw err;
  }
}

/** One canonical TaskRequest, whichever endpoint family the task came through. */
export function buildTaskRequest(config: Config, parts: TaskRequestParts): TaskRequest {
  return {
    taskId: parts.taskId,
    ownerId: parts.ownerId,
    model: parts.model.id,
    family: parts.model.family,
    endpoint: parts.endpoint,
    prompt: parts.prompt,
    enhancePrompt: parts.enhancePrompt ?? false,
    enableUpsample: parts.enableUpsample ?? false,
    aspectRatio: parts.aspectRatio,
    images: parts.images,
    size: parts.size,
    seconds: parts.seconds,
    watermark: parts.watermark ?? true,
    private: parts.private ?? false,
    character: parts.character,
    style: parts.style,
    metadata: parts.metadata,
    remixOf: parts.remixOf,
    cast: parts.cast,
    callbackUrl: parts.callbackUrl,
    createdAt: Date.now(),
    deadlineMs: config.env.TASK_DEADLINE_MINUTES * 60_000,
  };
}
