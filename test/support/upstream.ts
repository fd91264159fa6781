/**
 * What the provider saw for a task: the task's upstream job id from its workflow memo, and
 * that job as the simulator recorded it. Used by e2e tests and the benchmark.
 */
import type { Client } from '@temporalio/client';
import type { TaskState } from '../../src/tasks/task';

export interface SimJob {
  id: string;
  flavor: 'veo' | 'openai';
  model: string;
  prompt: string;
  status: string;
  createdAt: number;
  /** ms epoch at which the job reached its terminal state, or null while it runs. */
  completedAt: number | null;
  idempotencyKey: string | null;
  remixedFrom: string | null;
  params: Record<string, unknown>;
}

export async function taskMemoState(temporal: Client, taskId: string): Promise<TaskState> {
  return (await temporal.workflow.getHandle(taskId).describe()).memo?.state as TaskState;
}

/** Veo job ids are operation names (`models/<m>/operations/<id>`); the simulator keys jobs by the last part. */
export function simJobId(upstreamJobId: string): string {
  return upstreamJobId.split('/').pop() ?? upstreamJobId;
}

export async function upstreamJobOf(temporal: Client, simulatorUrl: string, taskId: string): Promise<SimJob> {
  const jobId = (await taskMemoState(temporal, taskId)).upstream?.jobId;
  if (!jobId) throw new Error(`task ${taskId} has no upstream job`);
  const res = await fetch(`${simulatorUrl}/_sim/jobs/${encodeURIComponent(simJobId(jobId))}`);
  if (res.status !== 200) throw new Error(`simulator has no job ${jobId}: HTTP ${res.status}`);
  return (await res.json()) as SimJob;
}
