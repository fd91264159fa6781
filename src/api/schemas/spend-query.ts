import { z } from 'zod';
import { BUCKET_SECONDS, bucketStart } from '../../billing/spend';
import { unixSeconds } from './ledger-query';

/** At most this many buckets per answer (400 days, or 16 days of hours). */
export const MAX_SPEND_BUCKETS = 400;

/** How far back a spend report reaches when `since` is not given. */
const DEFAULT_SPAN: Readonly<Record<'day' | 'hour', number>> = { day: 30 * 86_400, hour: 48 * 3600 };

/**
 * ?granularity=day|hour&since=&until= of GET /v1/billing/spend (until exclusive). Defaults:
 * until = the end of the current bucket, since = 30 days (day) or 48 hours (hour) before it;
 * at most MAX_SPEND_BUCKETS buckets.
 */
export const spendQueryFields = z.strictObject({
  granularity: z.enum(['day', 'hour']).default('day'),
  since: unixSeconds.optional(),
  until: unixSeconds.optional(),
});

export function spendQuery(now: number) {
  return spendQueryFields
    .transform((q) => {
      // By default the range ends with the bucket holding now, so what was just spent is in it.
      const until = q.until ?? bucketStart(now, q.granularity) + BUCKET_SECONDS[q.granularity];
      return { granularity: q.granularity, until, since: q.since ?? until - DEFAULT_SPAN[q.granularity] };
    })
    .refine((q) => q.since < q.until, { message: "'since' must be before 'until'", path: ['since'] })
    .refine((q) => Math.ceil((q.until - q.since) / BUCKET_SECONDS[q.granularity]) <= MAX_SPEND_BUCKETS, {
      message: `the range holds more than ${MAX_SPEND_BUCKETS} buckets; narrow it or use a coarser granularity`,
      path: ['since'],
    });
}
