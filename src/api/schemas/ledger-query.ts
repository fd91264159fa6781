import { z } from 'zod';

/** A unix time in seconds, as the query string carries it (from 2000 to 2100: anything else is a mistake). */
export const unixSeconds = z.coerce.number().int().min(946_684_800).max(4_102_444_800);

/** ?limit=&offset=&kind=&model=&since=&until= of the ledger listings (admin and the key's own): newest first. */
export const ledgerQuery = z
  .strictObject({
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    offset: z.coerce.number().int().min(0).max(10_000_000).default(0),
    kind: z.enum(['grant', 'charge', 'refund', 'usage']).optional(),
    model: z.string().min(1).max(200).optional(),
    since: unixSeconds.optional(),
    until: unixSeconds.optional(),
  })
  .refine((q) => q.since === undefined || q.until === undefined || q.since < q.until, { message: "'since' must be before 'until'", path: ['since'] });
