import { z } from 'zod';

/** ?after=&limit=&order= of GET /v1/videos, as the OpenAI SDK's videos.list() sends them. */
export const videoListQuery = z.object({
  after: z.string().min(1).max(200).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  order: z.enum(['asc', 'desc']).default('desc'),
});

/** ?variant= of GET /v1/videos/{id}/content (the SDK's downloadContent()). */
export const videoContentQuery = z.object({
  variant: z.enum(['video', 'thumbnail', 'spritesheet']).optional(),
});
