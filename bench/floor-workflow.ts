/**
 * The least a durable task can be, for bench:video's floor: a workflow that runs one activity
 * and ends. Bundled by bench/floor-worker.ts, apart from the product's workflows.
 */
import { proxyActivities } from '@temporalio/workflow';

export interface FloorActivities {
  benchFloorStep(): Promise<void>;
}

const { benchFloorStep } = proxyActivities<FloorActivities>({ startToCloseTimeout: '1 minute' });

export async function benchFloorTask(): Promise<void> {
  await benchFloorStep();
}
