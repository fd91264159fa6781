/**
 * POST /v1/videos (spec 4.3, 4.4): multipart fields, validated per model family.
 * Every field arrives as a string; booleans are 'true'/'false', metadata is a JSON string.
 */
import { z } from 'zod';
import { findVideoModel, videoModelIds, type VideoModel } from '../../catalog/models';
import { InvalidRequestError } from '../errors';
import { mentionedUsernames } from '../character-mentions';
import { callbackUrlField } from './callback-url';
import { characterTimestamps } from './character';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from './json-text';
import { MAX_PROMPT_CHARS } from './video-task-create';
import { parseOrThrow } from './zod-error';

const flag = z.enum(['true', 'false'], { message: "expected 'true' or 'false'" }).transform((v) => v === 'true');

/**
 * A JSON object given as a form field. Bounded like a JSON body (the value travels on into the
 * task's workflow input, which is serialised recursively): at most MAX_JSON_FIELD_CHARS, nested
 * at most MAX_JSON_DEPTH levels.
 */
export const MAX_JSON_FIELD_CHARS = 16 * 1024;

/** The field's JSON value (undefined when it is not JSON), or null after reporting why it may not be parsed. */
function parseJsonField(value: string, ctx: z.RefinementCtx): { json: unknown } | null {
  if (value.length > MAX_JSON_FIELD_CHARS) {
    ctx.addIssue({ code: 'custom', message: `must be at most ${MAX_JSON_FIELD_CHARS} characters of JSON` });
    return null;
  }
  if (exceedsJsonDepth(value, MAX_JSON_DEPTH)) {
    ctx.addIssue({ code: 'custom', message: `must not nest arrays and objects deeper than ${MAX_JSON_DEPTH} levels` });
    return null;
  }
  try {
    return { json: JSON.parse(value) as unknown };
  } catch {
    return { json: undefined };
  }
}

const jsonObject = z.string().transform((value, ctx) => {
  const field = parseJsonField(value, ctx);
  if (!field) return z.NEVER;
  const parsed = field.json;
  if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  ctx.addIssue({ code: 'custom', message: 'expected a JSON object, as a string' });
  return z.NEVER;
});

/** character_create's options (their types are "not shown" in the spec: booleans, both default false). */
const characterCreateOptions = z.strictObject({
  create_self_portrait: z.boolean().optional(),
  save_to_library: z.boolean().optional(),
});

export const videosCreateFields = z.strictObject({
  model: z.string().min(1),
  prompt: z.string().trim().min(1, 'prompt must not be empty').max(MAX_PROMPT_CHARS),
  seconds: z
    .string()
    .regex(/^\d{1,3}$/, 'expected a whole number of seconds, for example "8"')
    .transform(Number),
  size: z.string().min(1),
  watermark: flag.optional(),
  private: flag.optional(),
  style: z.string().trim().min(1).max(100).optional(),
  metadata: jsonObject.optional().meta({ description: 'A JSON object, as a string.' }),
  character_url: z.url({ protocol: /^https?$/ }).optional(),
  character_timestamps: characterTimestamps.optional(),
  character_from_task: z.string().min(1).optional(),
  character_create: z
    .string()
    .transform((value, ctx) => {
      const field = parseJsonField(value, ctx);
      if (!field) return z.NEVER;
      const parsed = characterCreateOptions.safeParse(field.json);
      if (parsed.success) return parsed.data;
      ctx.addIssue({ code: 'custom', message: 'expected a JSON object with the booleans create_self_portrait and save_to_library, as a string' });
      return z.NEVER;
    })
    .optional()
    .meta({ description: 'A JSON object, as a string: {"create_self_portrait": boolean, "save_to_library": boolean}, both default false.' }),
  callback_url: callbackUrlField,
});

export type VideosCreateFields = z.output<typeof videosCreateFields>;

const MOTION_ONLY = ['private', 'style', 'metadata', 'character_url', 'character_timestamps', 'character_from_task', 'character_create'] as const;

export interface ValidatedVideosCreate {
  fields: VideosCreateFields;
  model: VideoModel;
  aspectRatio?: '16:9' | '9:16';
}

/** `16x9` is the landscape choice of vidgen_3_1 (spec 4.3), `720x1280` the portrait one. */
const VIDGEN_ASPECT: Record<string, '16:9' | '9:16'> = { '16x9': '16:9', '720x1280': '9:16' };

export function parseVideosCreate(input: Record<string, string>, hasReference: boolean): ValidatedVideosCreate {
  if (typeof input.model === 'string') {
    const model = findVideoModel(input.model);
    if (model && !model.endpoints.includes('videos')) {
      throw new InvalidRequestError(`The model '${model.id}' is served on POST /v1/video/create (JSON); use that endpoint.`, 'model', 'unsupported_model');
    }
  }
  const fields = parseOrThrow(videosCreateFields, input);
  const model = findVideoModel(fields.model);
  if (!model || !model.endpoints.includes('videos')) {
    throw new InvalidRequestError(
      `The model '${fields.model}' does not exist on /v1/videos. Models: ${videoModelIds('videos').join(', ')}.`,
      'model',
      'model_not_found',
    );
  }
  const seconds = model.seconds ?? [];
  if (!seconds.includes(fields.seconds)) {
    throw new InvalidRequestError(`Invalid 'seconds' for model '${model.id}': allowed values are ${seconds.join(', ')}.`, 'seconds');
  }
  const sizes = model.sizes ?? [];
  if (!sizes.includes(fields.size)) {
    throw new InvalidRequestError(`Invalid 'size' for model '${model.id}': allowed values are ${sizes.join(', ')}.`, 'size');
  }
  if (model.family === 'vidgen') {
    for (const key of MOTION_ONLY) {
      if (fields[key] !== undefined) {
        throw new InvalidRequestError(`'${key}' is a motion-model parameter and is not supported by model '${model.id}'.`, key, 'unsupported_parameter');
      }
    }
    if (!hasReference) {
      throw new InvalidRequestError(
        `Missing required parameter: 'input_reference' (the base image) for model '${model.id}'.`,
        'input_reference',
        'missing_required_parameter',
      );
    }
    return { fields, model, aspectRatio: VIDGEN_ASPECT[fields.size] };
  }
  mentionedUsernames(fields.prompt);
  if (fields.character_url !== undefined && fields.character_from_task !== undefined) {
    throw new InvalidRequestError(`Give at most one of 'character_url' and 'character_from_task'.`, 'character_from_task');
  }
  if (fields.character_timestamps !== undefined && fields.character_url === undefined && fields.character_from_task === undefined) {
    throw new InvalidRequestError(`'character_timestamps' requires 'character_url' or 'character_from_task'.`, 'character_timestamps');
  }
  if (fields.character_create !== undefined && fields.character_url === undefined && fields.character_from_task === undefined) {
    throw new InvalidRequestError(`'character_create' requires 'character_url' or 'character_from_task'.`, 'character_create');
  }
  return { fields, model };
}
