import { z } from 'zod';

/** ?limit=&before= of the ledger listings (admin and the key's own): newest first, paged back by entry id. */
export const ledgerQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  before: z.coerce.number().int().min(1).optional(),
});
