import { z } from 'zod';
import type { LedgerEntryView } from '../../../billing/ledger';
import type { UsageTotals } from '../../../billing/usage';
import { describes } from '../describes';
import { credits, unixSeconds } from './common';

/** A key's money, as GET /v1/billing and the admin API show it. */

export const ledgerEntry = describes<LedgerEntryView>()(
  z.object({
    id: z.string().meta({ description: '`le_<n>` for grants, charges and refunds; the usage record id (`use_...`) for usage.' }),
    object: z.literal('ledger_entry'),
    kind: z.enum(['grant', 'charge', 'refund', 'usage']),
    amount: credits.meta({ description: 'Credits: positive adds to the balance, negative takes from it.' }),
    ref: z.string().meta({ description: "The task id, the usage record's id, or the grant's reference." }),
    reason: z.string(),
    model: z.string().nullable(),
    created_at: unixSeconds,
  }),
);

export const usageTotals = describes<UsageTotals>()(
  z.object({
    model: z.string(),
    requests: z.int(),
    input_tokens: z.int(),
    output_tokens: z.int(),
    cache_creation_tokens: z.int(),
    cache_read_tokens: z.int(),
  }),
);

const limit = z.int().nullable();

export const billing = z.object({
  object: z.literal('billing'),
  key_id: z.string(),
  unlimited: z.boolean(),
  balance: credits.nullable().meta({ description: 'Credits left; null when the key is unlimited.' }),
  granted: credits,
  spent: credits.meta({ description: 'Charges + usage - refunds.' }),
  rate_limit_rpm: limit,
  max_concurrent_tasks: limit.meta({ description: 'Video tasks and background responses in flight at once; null for no limit.' }),
  tasks_in_flight: z.int().meta({ description: 'Video tasks and background responses running now.' }),
  max_text_in_flight: limit.meta({ description: "Null: the gateway's default (TEXT_MAX_IN_FLIGHT_PER_KEY)." }),
  text_in_flight: z.int(),
  held: credits.meta({ description: 'Credits that text requests in flight hold; balance - held is what the key can spend now.' }),
  text_usage: z.array(usageTotals),
});

export const ledgerPage = z.object({ object: z.literal('list'), data: z.array(ledgerEntry), has_more: z.boolean() });
