/**
 * A task's workflow as Temporal describes it once the run has closed. A client sees a task end
 * in its view, written during the run's last workflow task, before Temporal records that task's
 * completion (and the search attributes it sets); on a loaded worker the gap can be seconds.
 * Waiting for the run's result orders the two.
 */
import type { Client, WorkflowExecutionDescription } from '@temporalio/client';

export async function closedRunDescription(temporal: Client, workflowId: string): Promise<WorkflowExecutionDescription> {
  const handle = temporal.workflow.getHandle(workflowId);
  // A failed or cancelled run is closed too; what it ended with is the caller's to assert.
  await handle.result().catch(() => undefined);
  return handle.describe();
}
