import { z } from 'zod';
import type { SpendBucket } from '../../../billing/spend';
import type { TimelineEvent } from '../../../tasks/task-timeline';
import { describes } from '../describes';
import { usageRecord } from './admin';
import { usageTotals } from './billing';
import { character } from './characters';
import { credits, unixSeconds } from './common';
import { videoListItem } from './video-objects';

/** The answers of the endpoints the console added (issue 21, docs/console.md). */

export const consoleSession = z.object({
  object: z.literal('console.session'),
  role: z.enum(['key', 'admin']),
  key: z
    .object({ id: z.string(), name: z.string(), key_hint: z.string() })
    .nullable()
    .meta({ description: "The signed-in key; null for an operator's session." }),
  csrf_token: z.string().meta({ description: 'Send it as X-CSRF-Token on every cookie-authenticated request but GET/HEAD/OPTIONS.' }),
  expires_at: unixSeconds.meta({ description: 'When the session ends unless used again (idle timeout), capped by its absolute lifetime.' }),
  temporal_ui_url: z.string().nullable().meta({ description: 'Base of the Temporal Web UI (operators only; null = none).' }),
});

export const consoleSessionDeleted = z.object({ object: z.literal('console.session.deleted'), deleted: z.literal(true) });

const spendBucket = describes<SpendBucket>()(
  z.object({
    start: unixSeconds.meta({ description: "The UTC bucket's start (midnight or the top of the hour)." }),
    model: z.string(),
    spent: credits.meta({ description: 'Charges + usage - refunds in the bucket.' }),
    count: z.int().meta({ description: 'Ledger entries in the bucket (charges, refunds, priced usage records).' }),
  }),
);

export const billingSpend = z.object({
  object: z.literal('billing.spend'),
  granularity: z.enum(['day', 'hour']),
  since: unixSeconds,
  until: unixSeconds,
  data: z.array(spendBucket),
});

export const billingUsage = z.object({ object: z.literal('usage'), totals: z.array(usageTotals), recent: z.array(usageRecord) });

const timelineEvent = describes<TimelineEvent>()(
  z.object({
    at: unixSeconds,
    event: z.enum(['created', 'charged', 'failover', 'submitted', 'processing', 'stored', 'completed', 'failed', 'refunded', 'cancelled']),
    detail: z.string().nullable(),
  }),
);

export const videoTimeline = z.object({ object: z.literal('video.timeline'), id: z.string(), data: z.array(timelineEvent) });

export const characterList = z.object({
  object: z.literal('list'),
  data: z.array(character),
  first_id: z.string().nullable(),
  last_id: z.string().nullable(),
  has_more: z.boolean(),
});

export const adminTaskList = z.object({
  object: z.literal('list'),
  data: z.array(
    videoListItem.extend({
      key_id: z.string(),
      temporal_ui_url: z.string().nullable().meta({ description: "The workflow's page in the Temporal Web UI; null without TEMPORAL_UI_URL." }),
      channel: z.string().nullable().meta({ description: 'The channel that accepted the upstream job; null before the submit.' }),
      upstream_job_id: z
        .string()
        .nullable()
        .meta({ description: "The provider's own id of the job (what to quote to the provider about it); null before the submit." }),
      failovers: z
        .array(z.object({ from: z.string(), to: z.string(), reason: z.string(), at: unixSeconds }))
        .meta({ description: 'Channels the submit left for the next one serving the model, in order (README "Video failover").' }),
    }),
  ),
  first_id: z.string().nullable(),
  last_id: z.string().nullable().meta({ description: 'The cursor (`after`) of the next page.' }),
  has_more: z.boolean(),
});
