import { z } from 'zod';

/** The three probes of app.ts (health.ts says what each checks). */
export const liveness = z.object({ status: z.literal('ok') });

export const readiness = z.object({
  status: z.enum(['ready', 'unavailable']),
  store: z.string().meta({ description: "'ok', or why the store does not answer." }),
  temporal: z.string(),
  worker: z.string(),
});

export const healthReport = z.object({
  status: z.enum(['ok', 'unavailable']),
  temporal: z.string().meta({ description: "'ok', or why Temporal does not answer." }),
  worker: z.string().meta({ description: "'ok', 'ok (n pollers)', or why no worker polls the task queue." }),
});
