import { z } from 'zod';
import type { VideoCreateView, VideoQueryView } from '../../views/video-task';
import { describes } from '../describes';
import { signedUrl, taskFailure, taskStatus, unixSeconds } from './common';

/** POST /v1/video/create (spec 2.1). */
export const videoTaskCreated = describes<VideoCreateView>()(
  z.object({
    id: z.string().meta({ description: '`<model>:<ms timestamp>-<10 random characters>`.' }),
    status: taskStatus,
    status_update_time: unixSeconds,
    enhanced_prompt: z.string(),
  }),
);

/** GET /v1/video/query (spec 2.1). */
export const videoTask = describes<VideoQueryView>()(
  z.object({
    id: z.string(),
    status: taskStatus,
    video_url: signedUrl.nullable().meta({ description: 'A signed gateway link once completed, else null.' }),
    enhanced_prompt: z.string(),
    status_update_time: unixSeconds,
    error: taskFailure.optional(),
  }),
);
