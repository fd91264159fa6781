import { z } from 'zod';

/** ?limit=&offset= of the ledger listings (admin and the key's own): newest first. */
export const ledgerQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  offset: z.coerce.number().int().min(0).max(10_000_000).default(0),
});
