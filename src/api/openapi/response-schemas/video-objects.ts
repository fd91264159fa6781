import { z } from 'zod';
import type { VideoContentView, videoDeletedView, VideoListItemView, VideoObjectCreateView, VideoStatusView, videoRemixView } from '../../views/video-object';
import { describes } from '../describes';
import { credits, progress, signedUrl, taskFailure, taskStatus, unixSeconds } from './common';

/** The /v1/videos family (spec 2.2), as views/video-object.ts renders it. */

const videoObjectCreate = describes<VideoObjectCreateView>()(
  z.object({
    id: z.string().meta({ description: '`video_<uuid>` for vidgen_3_1 models, `<model>:<ms>-<suffix>` for motion models.' }),
    object: z.literal('video'),
    model: z.string(),
    status: z.enum(['queued', 'pending', 'processing', 'completed', 'failed']).meta({ description: 'queued (vidgen_3_1) or pending (motion) at creation.' }),
    progress,
    created_at: unixSeconds,
    seconds: z.int(),
    size: z.string(),
  }),
);

/** POST /v1/videos: with character_create.save_to_library, the character saved to the key's library too. */
export const videoObjectCreated = videoObjectCreate.extend({
  character: z.object({ id: z.string(), username: z.string() }).optional().meta({ description: 'Extension: the character saved to the library.' }),
});

export const videoObjectStatus = describes<VideoStatusView>()(
  z.union([
    z
      .object({
        id: z.string(),
        status: taskStatus,
        progress,
        video_url: signedUrl.nullable(),
        enhanced_prompt: z.string(),
        status_update_time: unixSeconds,
        error: taskFailure.optional(),
      })
      .meta({ title: 'vidgen task' }),
    z
      .object({
        id: z.string(),
        status: taskStatus,
        progress,
        video_url: signedUrl.nullable(),
        model: z.string(),
        seconds: z.int(),
        size: z.string(),
        error: taskFailure.optional(),
      })
      .meta({ title: 'motion task' }),
  ]),
);

export const videoRemix = describes<ReturnType<typeof videoRemixView>>()(
  z.object({
    id: z.string().meta({ description: '`<model>:remix-<ms>-<suffix>`.' }),
    object: z.literal('video'),
    status: taskStatus,
    progress,
  }),
);

export const videoContent = describes<VideoContentView>()(
  z.object({ id: z.string(), status: z.literal('completed'), video_url: signedUrl, enhanced_prompt: z.string(), status_update_time: unixSeconds }),
);

/** A list item: the view plus `cost` (credits charged for the task, 0 once refunded). */
export const videoListItem = describes<VideoListItemView>()(
  z.object({
    id: z.string(),
    object: z.literal('video'),
    model: z.string(),
    status: taskStatus,
    progress,
    created_at: unixSeconds,
    completed_at: unixSeconds.nullable(),
    seconds: z.int(),
    size: z.string(),
    video_url: signedUrl.nullable(),
    error: taskFailure.nullable(),
  }),
).extend({ cost: credits.meta({ description: 'Credits charged for the task; 0 once refunded.' }) });

export const videoList = z.object({
  object: z.literal('list'),
  data: z.array(videoListItem),
  first_id: z.string().nullable(),
  last_id: z.string().nullable().meta({ description: 'The cursor (`after`) of the next page.' }),
  has_more: z.boolean(),
});

/** DELETE /v1/videos/{id}: the OpenAI SDK's VideoDeleteResponse. */
export const videoDeleted = describes<ReturnType<typeof videoDeletedView>>()(
  z.object({
    id: z.string(),
    object: z.literal('video.deleted'),
    deleted: z.literal(true),
  }),
);
