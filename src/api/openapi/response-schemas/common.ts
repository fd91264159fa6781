import { z } from 'zod';

/** Building blocks the response schemas share. */
export const taskStatus = z.enum(['pending', 'processing', 'completed', 'failed']).meta({
  description: 'pending (accepted, not yet running upstream) -> processing -> completed | failed.',
});
export const unixSeconds = z.int().meta({ description: 'Unix time in seconds.' });
export const credits = z.int().meta({ description: 'Credits (1 credit = 1 µUSD).' });
export const taskFailure = z
  .object({ code: z.string(), message: z.string() })
  .meta({ description: 'Extension: why a failed task failed (upstream_failed, upstream_rejected, content_filtered, invalid_input, timeout, ...).' });
export const progress = z.int().min(0).max(100).meta({ description: '0-100; never goes backwards.' });
export const signedUrl = z.string().meta({ description: 'A signed, expiring gateway link (GET /files/...).' });
