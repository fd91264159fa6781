import { z } from 'zod';
import type { AuditReport } from '../../../billing/audit';
import type { UsageRecordView } from '../../../billing/usage';
import type { VideoChannelView } from '../../views/admin-channels';
import type { ChannelHealthView } from '../../../proxy/channel-health';
import { describes } from '../describes';
import { ledgerEntry, usageTotals } from './billing';
import { credits, unixSeconds } from './common';

/** The admin API's answers (routes/admin.ts). */

const limits = {
  rate_limit_rpm: z.int().nullable(),
  max_concurrent_tasks: z.int().nullable().meta({ description: 'Video tasks and background responses in flight at once; null for no limit.' }),
  max_text_in_flight: z.int().nullable().meta({ description: "Null: the gateway's default (TEXT_MAX_IN_FLIGHT_PER_KEY)." }),
};

export const keyIssued = z.object({
  id: z.string(),
  name: z.string(),
  key: z.string().meta({ description: 'The secret, shown only here.' }),
  created_at: unixSeconds,
  balance: credits.nullable().meta({ description: 'The opening quota; null = unlimited.' }),
  ...limits,
});

export const apiKey = z.object({
  id: z.string(),
  object: z.literal('api_key'),
  name: z.string(),
  key_hint: z.string(),
  created_at: unixSeconds,
  unlimited: z.boolean(),
  ...limits,
});

/** GET /admin/keys: each key with its balance and spending. */
export const apiKeyList = z.object({
  object: z.literal('list'),
  data: z.array(
    apiKey.extend({
      revoked_at: unixSeconds.nullable(),
      balance: credits.nullable().meta({ description: 'Credits left; null when the key is unlimited.' }),
      spent: credits.meta({ description: 'Charges + usage - refunds.' }),
    }),
  ),
});

export const apiKeyDetail = apiKey.extend({
  revoked_at: unixSeconds.nullable(),
  balance: credits.nullable(),
  granted: credits,
  spent: credits,
  tasks_in_flight: z.int(),
  text_in_flight: z.int(),
  held: credits,
});

export const quotaChanged = z.object({ id: z.string(), object: z.literal('api_key.quota'), balance: credits });

export const keyDeleted = z.object({ id: z.string(), object: z.literal('api_key.deleted'), deleted: z.literal(true) });

export const keyLedgerPage = z.object({ object: z.literal('list'), key_id: z.string(), data: z.array(ledgerEntry), has_more: z.boolean() });

export const ledgerAudit = describes<AuditReport>()(
  z.object({
    object: z.literal('ledger_audit'),
    keys: z.int(),
    entries: z.int(),
    tasks: z.int(),
    mismatches: z.array(
      z.object({
        key_id: z.string(),
        problem: z.string(),
        ref: z.string().optional(),
        expected: z.number().optional(),
        actual: z.number().optional(),
      }),
    ),
  }),
);

export const usageRecord = describes<UsageRecordView>()(
  z.object({
    id: z.string(),
    request_id: z.string(),
    model: z.string(),
    channel: z.string(),
    endpoint: z.enum(['messages', 'chat', 'responses']),
    streamed: z.boolean(),
    outcome: z.enum(['completed', 'aborted', 'failed', 'orphaned']),
    input_tokens: z.int(),
    output_tokens: z.int(),
    cache_creation_tokens: z.int(),
    cache_read_tokens: z.int(),
    created_at: unixSeconds,
  }),
);

export const keyUsage = z.object({ object: z.literal('usage'), key_id: z.string(), totals: z.array(usageTotals), recent: z.array(usageRecord) });

const channelError = z.object({ at: unixSeconds, message: z.string() });

/** What every channel is configured as (channelSettings), text and video alike. */
const channelSettings = z.object({
  name: z.string(),
  type: z.string(),
  models: z.array(z.string()),
  priority: z.number(),
  weight: z.number(),
  simulated: z.boolean(),
});

const channelHealth = describes<ChannelHealthView>()(
  channelSettings.extend({
    state: z.enum(['healthy', 'resting']),
    resting_until: unixSeconds.nullable(),
    consecutive_failures: z.int(),
    served: z.int(),
    failed: z.int(),
    last_error: z.string().nullable(),
    failovers: z.int().meta({ description: 'Requests that moved on to the next channel after this one failed them, since the process started.' }),
    cooldowns: z.int().meta({ description: 'Rests begun since the process started.' }),
    recent_errors: z.array(channelError).meta({ description: 'The newest failures, newest first (at most 5).' }),
  }),
);

const videoChannel = describes<VideoChannelView>()(
  channelSettings
    .extend({
      kind: z.literal('video'),
      state: z.enum(['healthy', 'failing']).meta({ description: 'failing: a retryable failure (connection, 429, 5xx) within the last 5 minutes.' }),
      resting_until: z.null(),
      consecutive_failures: z.null(),
      served: z.null(),
      failed: z.int().meta({ description: 'Failed upstream requests within the last 24 hours.' }),
      last_error: z.string().nullable(),
      failovers: z.null(),
      cooldowns: z.null(),
      recent_errors: z.array(channelError).meta({ description: 'The newest failures within the last 24 hours, newest first (at most 5).' }),
    })
    .meta({ description: 'A video channel: the worker calls it and records its failures in the store, which every API process reads.' }),
);

export const channelList = z.object({
  object: z.literal('list'),
  data: z.array(z.union([channelHealth.extend({ kind: z.literal('text') }), videoChannel])),
});
