import { Client, Connection, WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/client';
import { WEBHOOK_DELIVERY_WORKFLOW, type WebhookDeliveryInput } from './announce-types';

export interface DeliveryStarter {
  start: (input: WebhookDeliveryInput) => Promise<void>;
}

/**
 * One per address, namespace and queue for the process's life: a supervised worker that is
 * re-created (main.ts) reuses it instead of opening another connection each time. Lazy: it
 * connects on the first announce.
 */
const starters = new Map<string, DeliveryStarter>();

/**
 * Starts delivery workflows from the worker's announce step, on the worker's own task queue.
 * The workflow id is the event id and duplicates are rejected, so an announce that runs
 * again never makes a second delivery: "already started" is success.
 */
export function deliveryStarter(address: string, namespace: string, taskQueue: string): DeliveryStarter {
  const memo = `${address}|${namespace}|${taskQueue}`;
  const known = starters.get(memo);
  if (known) return known;
  const connection = Connection.lazy({ address });
  const client = new Client({ connection, namespace });
  const starter: DeliveryStarter = {
    async start(input) {
      try {
        await client.workflow.start(WEBHOOK_DELIVERY_WORKFLOW, {
          taskQueue,
          workflowId: input.eventId,
          args: [input],
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        });
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      }
    },
  };
  starters.set(memo, starter);
  return starter;
}
