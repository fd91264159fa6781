import { z } from 'zod';
import { MOTION_SIZES } from '../../catalog/models';
import { callbackUrlField } from './callback-url';
import { MAX_PROMPT_CHARS } from './video-task-create';

/** POST /v1/videos/{id}/remix (spec 4.7): a prompt, and optionally new output dimensions. */
export const videosRemixBody = z.strictObject({
  prompt: z.string().trim().min(1, 'prompt must not be empty').max(MAX_PROMPT_CHARS),
  size: z.enum(MOTION_SIZES).optional(),
  callback_url: callbackUrlField,
});
