/**
 * A running task as a status read shows it: its memo, moved on by what the step that watches
 * its upstream job last reported (heartbeat details, held by the server). Pure, unit-tested.
 */
import { z } from 'zod';
import type { TaskState } from './task';

const JobProgressSchema = z.object({
  status: z.enum(['pending', 'processing']),
  progress: z.number().int().min(0).max(99),
});

/** Progress only goes forward and a status only from pending to processing; details that do not parse are ignored. */
export function withJobProgress(state: TaskState, details: unknown): TaskState {
  const parsed = JobProgressSchema.safeParse(details);
  if (!parsed.success || (state.status !== 'pending' && state.status !== 'processing')) return state;
  const { status, progress } = parsed.data;
  const next: TaskState = { ...state, progress: Math.max(state.progress, progress) };
  if (status === 'processing' && state.status === 'pending') next.status = 'processing';
  return next;
}
