/** The workflow of core-warning-child.ts: one activity, which the child lets finish after the run is gone. */
import { proxyActivities } from '@temporalio/workflow';

const { outlive } = proxyActivities<{ outlive(): Promise<void> }>({ startToCloseTimeout: '1 minute' });

export async function outlivedByItsActivity(): Promise<void> {
  await outlive();
}
