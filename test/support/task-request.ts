import { randomUUID } from 'node:crypto';
import type { TaskRequest } from '../../src/tasks/task';

/** A task request as the API builds it (a vidgen3 text-to-video by default), for tests of every project. */
export function taskRequest(patch: Partial<TaskRequest> = {}): TaskRequest {
  return {
    taskId: `vidgen3:${Date.now()}-${randomUUID().slice(0, 8)}`,
    ownerId: 'key_workflow_test',
    model: 'vidgen3',
    family: 'vidgen',
    endpoint: 'video-create',
    prompt: 'a red fox running through snow',
    enhancePrompt: false,
    enableUpsample: false,
    images: [],
    watermark: false,
    private: false,
    createdAt: Date.now(),
    ...patch,
  };
}
