import { z } from 'zod';

/** The admin API's request bodies and queries (routes/admin.ts); the OpenAPI document reads them too. */
const credits = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const rpm = z.number().int().min(1).max(1_000_000).nullable();
const maxTasks = z.number().int().min(1).max(100_000).nullable();
/** Null: the gateway's default (TEXT_MAX_IN_FLIGHT_PER_KEY). */
const maxText = z.number().int().min(1).max(1_000_000).nullable();

/** POST /admin/keys. */
export const createKeyBody = z.strictObject({
  name: z.string().trim().min(1).max(200),
  /** Opening balance in credits; absent = unlimited. */
  quota: credits.optional(),
  rate_limit_rpm: rpm.optional(),
  max_concurrent_tasks: maxTasks.optional(),
  max_text_in_flight: maxText.optional(),
});

/** PATCH /admin/keys/{id}: null removes a limit. */
export const updateKeyBody = z.strictObject({
  rate_limit_rpm: rpm.optional(),
  max_concurrent_tasks: maxTasks.optional(),
  max_text_in_flight: maxText.optional(),
});

/** POST /admin/keys/{id}/quota. */
export const quotaBody = z.strictObject({
  delta: z
    .number()
    .int()
    .min(-Number.MAX_SAFE_INTEGER)
    .max(Number.MAX_SAFE_INTEGER)
    .refine((d) => d !== 0, 'delta must not be 0'),
  reason: z.string().trim().min(1).max(500).optional(),
});

/** ?limit= of GET /admin/keys/{id}/usage. */
export const usageQuery = z.strictObject({ limit: z.coerce.number().int().min(1).max(1000).default(100) });

/** ?include_revoked= of GET /admin/keys: revoked keys are listed too (default: live keys only). */
export const keyListQuery = z.strictObject({
  include_revoked: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
});

/** ?key_id=&model=&status=&limit=&after= of GET /admin/tasks. */
export const adminTasksQuery = z.strictObject({
  key_id: z.string().min(1).max(200).optional(),
  model: z.string().min(1).max(200).optional(),
  status: z.enum(['pending', 'processing', 'completed', 'failed']).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  after: z.string().min(1).max(200).optional(),
});
