/**
 * POST /v1/video/create (spec 4.1, 4.9, 8): the body schema, then the per-model rules.
 * Unknown fields are rejected (as OpenAI does) so a typo never silently does nothing.
 */
import { z } from 'zod';
import { findVideoModel, videoModelIds, type VideoModel } from '../../catalog/models';
import { InvalidRequestError } from '../errors';
import { parseOrThrow } from './zod-error';
import { characterTimestamps } from './character';
import { mentionedUsernames } from '../character-mentions';
import { callbackUrlField } from './callback-url';

export const MAX_PROMPT_CHARS = 32_000;

export const videoCreateBody = z.strictObject({
  model: z.string().min(1),
  prompt: z.string().trim().min(1, 'prompt must not be empty').max(MAX_PROMPT_CHARS),
  enhance_prompt: z.boolean().optional(),
  enable_upsample: z.boolean().optional(),
  aspect_ratio: z.enum(['16:9', '9:16']).optional(),
  images: z.array(z.string().min(1)).optional(),
  orientation: z.enum(['portrait', 'landscape']).optional(),
  size: z.enum(['small', 'large']).optional(),
  duration: z.number().int().optional(),
  watermark: z.boolean().optional(),
  private: z.boolean().optional(),
  character_url: z.url({ protocol: /^https?$/ }).optional(),
  character_timestamps: characterTimestamps.optional(),
  callback_url: callbackUrlField,
});

export type VideoCreateBody = z.output<typeof videoCreateBody>;

const MOTION_ONLY = ['orientation', 'size', 'duration', 'watermark', 'private', 'character_url', 'character_timestamps'] as const;

/** Output dimensions of a motion task created on /v1/video/create. */
const MOTION_DIMENSIONS = {
  portrait: { small: '720x1280', large: '1024x1792' },
  landscape: { small: '1280x720', large: '1792x1024' },
} as const;

export interface ValidatedVideoCreate {
  body: VideoCreateBody;
  model: VideoModel;
  /** Resolved output dimensions (motion) */
  size?: string;
  seconds?: number;
}

export function parseVideoCreate(input: unknown): ValidatedVideoCreate {
  const body = parseOrThrow(videoCreateBody, input);
  const model = findVideoModel(body.model);
  if (!model) {
    throw new InvalidRequestError(
      `The model '${body.model}' does not exist or is not a video model. Video models: ${videoModelIds('video-create').join(', ')}.`,
      'model',
      'model_not_found',
    );
  }
  if (!model.endpoints.includes('video-create')) {
    throw new InvalidRequestError(
      `The model '${model.id}' is served only on POST /v1/videos (multipart/form-data); use that endpoint.`,
      'model',
      'unsupported_model',
    );
  }
  const images = body.images ?? [];
  if (images.length > model.maxImages) {
    throw new InvalidRequestError(`Too many images for model '${model.id}': at most ${model.maxImages}, got ${images.length}.`, 'images', 'too_many_images');
  }

  if (model.family === 'vidgen') {
    for (const key of MOTION_ONLY) {
      if (body[key] !== undefined) {
        throw new InvalidRequestError(`'${key}' is a motion-model parameter and is not supported by model '${model.id}'.`, key, 'unsupported_parameter');
      }
    }
    return { body, model, seconds: 8 };
  }

  // A motion prompt casts its @mentions: their number is bounded before anything is stored or looked up.
  mentionedUsernames(body.prompt);
  if (body.aspect_ratio !== undefined) {
    throw new InvalidRequestError(
      `'aspect_ratio' is not supported by motion models; use 'orientation' (portrait or landscape).`,
      'aspect_ratio',
      'unsupported_parameter',
    );
  }
  if (body.images === undefined) {
    throw new InvalidRequestError(
      `Missing required parameter: 'images' (reference image URLs; may be an empty array) for motion models.`,
      'images',
      'missing_required_parameter',
    );
  }
  const durations = model.durations ?? [];
  const duration = body.duration ?? durations[0];
  if (duration === undefined || !durations.includes(duration)) {
    throw new InvalidRequestError(`Invalid 'duration' for model '${model.id}': allowed values are ${durations.join(', ')} seconds.`, 'duration');
  }
  if (body.character_timestamps !== undefined && body.character_url === undefined) {
    throw new InvalidRequestError(`'character_timestamps' requires 'character_url'.`, 'character_timestamps');
  }
  const size = MOTION_DIMENSIONS[body.orientation ?? 'portrait'][body.size ?? 'small'];
  return { body, model, size, seconds: duration };
}
