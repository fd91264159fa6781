import { z } from 'zod';
import { characterTimestamps } from './character';

/** POST /motion/v1/characters (spec 4.8): exactly one of url and from_task. */
export const characterCreateBody = z
  .strictObject({
    url: z.url({ protocol: /^https?$/ }).optional(),
    from_task: z.string().min(1).optional(),
    timestamps: characterTimestamps.optional(),
  })
  .refine((b) => (b.url === undefined) !== (b.from_task === undefined), {
    message: "give exactly one of 'url' and 'from_task'",
    path: ['url'],
  });

/** ?limit= of GET /motion/v1/characters (newest first). */
export const characterListQuery = z.strictObject({ limit: z.coerce.number().int().min(1).max(100).default(20) });
