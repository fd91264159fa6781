/**
 * The webhook delivery workflow with scripted activities: retried with backoff until a 2xx,
 * given up (and marked failed) when its window ends, and at once when the target may never be
 * called. Histories are replay fixtures (RECORD_HISTORIES=1; replay.test.ts).
 */
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { workflowBundlePath } from '../../src/config/paths';
import type { WebhookActivities } from '../../src/webhooks/activities';
import { UNDELIVERABLE, type WebhookDeliveryInput } from '../../src/webhooks/announce-types';
import { webhookDelivery } from '../../src/workflows/webhook-delivery';
import { environmentPerFile, recordHistories } from './harness';

const environment = environmentPerFile();

type DeliveryActivities = Pick<WebhookActivities, 'deliverWebhook' | 'finishWebhookEvent'>;

async function runDelivery(shape: string, deliver: (attempt: number) => Promise<{ status: number }>, deliverForMs = 60_000) {
  const finished: string[] = [];
  let attempts = 0;
  const activities: DeliveryActivities = {
    async deliverWebhook() {
      attempts++;
      return deliver(attempts);
    },
    async finishWebhookEvent(input) {
      finished.push(input.state);
    },
  };
  const taskQueue = `wh-${randomUUID()}`;
  const input: WebhookDeliveryInput = { eventId: `evt_video_${randomUUID()}_completed`, retryInitialMs: 50, retryMaxMs: 200, deliverForMs };
  const worker = await Worker.create({ connection: environment().nativeConnection, taskQueue, workflowBundle: { codePath: workflowBundlePath() }, activities });
  const { result, runId } = await worker.runUntil(async () => {
    const handle = await environment().client.workflow.start(webhookDelivery, { taskQueue, workflowId: input.eventId, args: [input] });
    return { result: await handle.result(), runId: handle.firstExecutionRunId };
  });
  await recordHistories(environment(), shape, input.eventId, runId);
  return { result, attempts, finished };
}

test('refused deliveries are retried until one is acknowledged', async () => {
  const { result, attempts, finished } = await runDelivery('webhook-delivered', async (attempt) => {
    if (attempt < 4) throw ApplicationFailure.retryable(`HTTP 500`, 'WebhookAttemptFailed');
    return { status: 200 };
  });
  expect(result).toBe('delivered');
  expect(attempts).toBe(4);
  // The delivery step marks the event delivered itself.
  expect(finished).toEqual([]);
});

test('a receiver that never acknowledges: the event is given up when its window ends, and marked failed', async () => {
  const { result, attempts, finished } = await runDelivery(
    'webhook-given-up',
    async () => {
      throw ApplicationFailure.retryable('request failed: ECONNREFUSED', 'WebhookAttemptFailed');
    },
    1500,
  );
  expect(result).toBe('failed');
  // How many attempts fit in the window is the server's timing; that the window ends them is the point.
  expect(attempts).toBeGreaterThan(0);
  expect(finished).toEqual(['failed']);
}, 30_000);

test('a target that may never be called is given up at once', async () => {
  const { result, attempts, finished } = await runDelivery('webhook-undeliverable', async () => {
    throw ApplicationFailure.create({ message: 'the target URL points at a private network address', type: UNDELIVERABLE, nonRetryable: true });
  });
  expect(result).toBe('failed');
  expect(attempts).toBe(1);
  expect(finished).toEqual(['failed']);
});
