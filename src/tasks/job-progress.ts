/**
 * A running task as a status read shows it: its memo, moved on by what the step that watches
 * its upstream job last reported (heartbeat details, held by the server). Pure, unit-tested.
 */
import { z } from 'zod';
import type { JobProgress } from '../workflows/video-task-types';
import type { TaskState } from './task';

const JobProgressSchema: z.ZodType<JobProgress> = z.object({
  status: z.enum(['pending', 'processing']),
  progress: z.number().int().min(0).max(99),
});

/** Heartbeat details as a job's progress; null for anything else (a download step's byte count, a newer shape). */
export function parseJobProgress(details: unknown): JobProgress | null {
  const parsed = JobProgressSchema.safeParse(details);
  return parsed.success ? parsed.data : null;
}

/** Progress only goes forward and a status only from pending to processing; details that do not parse are ignored. */
export function withJobProgress(state: TaskState, details: unknown): TaskState {
  const parsed = parseJobProgress(details);
  if (!parsed || (state.status !== 'pending' && state.status !== 'processing')) return state;
  const { status, progress } = parsed;
  const next: TaskState = { ...state, progress: Math.max(state.progress, progress) };
  if (status === 'processing' && state.status === 'pending') next.status = 'processing';
  return next;
}
