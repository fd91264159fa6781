/**
 * The background response workflow with scripted activities: completed (the watch's usage
 * billed at the close), failed upstream, failed over after "not taken" creates, kept on its
 * channel after an unknown outcome, refused when its hold was released, and cancelled while
 * watched (the provider asked, the close told cancelled). Histories are replay fixtures
 * (RECORD_HISTORIES=1; replay.test.ts).
 */
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import { Worker } from '@temporalio/worker';
import type { ResponseActivities } from '../../src/activities/response-activities';
import type { BillingActivities } from '../../src/billing/charge-activities';
import { workflowBundlePath } from '../../src/config/paths';
import { backgroundResponseWorkflow } from '../../src/workflows/background-response';
import type { BackgroundResponseInput, CloseResponseInput, SubmitResponseInput } from '../../src/workflows/background-response-types';
import { FAILURE_TYPES, SUBMIT_FAILURE_TYPES } from '../../src/workflows/video-task-types';
import { environmentPerFile, recordHistories } from './harness';

const environment = environmentPerFile();

type Steps = ResponseActivities & Pick<BillingActivities, 'claimCharge'>;

const USAGE = { inputTokens: 10, outputTokens: 20, cacheCreationTokens: 0, cacheReadTokens: 0 };

interface Script {
  claim?: () => Promise<'claimed'>;
  submit?: (input: SubmitResponseInput, attempt: number) => Promise<{ upstreamId: string } | { closed: true }>;
  watch?: () => Promise<Awaited<ReturnType<ResponseActivities['watchBackgroundResponse']>>>;
}

async function run(shape: string, script: Script, opts: { cancelWhileWatched?: boolean; channels?: string[] } = {}) {
  const submits: string[] = [];
  const closes: CloseResponseInput[] = [];
  const cancels: string[] = [];
  let watching: () => void = () => undefined;
  const watched = new Promise<void>((resolve) => (watching = resolve));
  const activities: Steps = {
    claimCharge: script.claim ?? (async () => 'claimed'),
    async submitBackgroundResponse(input) {
      submits.push(input.channel);
      return (script.submit ?? (async () => ({ upstreamId: 'up_1' })))(input, submits.length);
    },
    async watchBackgroundResponse() {
      watching();
      if (opts.cancelWhileWatched) {
        // Until the workflow's cancellation reaches this step through its heartbeat.
        for (;;) {
          Context.current().heartbeat();
          await Context.current().sleep(50);
        }
      }
      return (script.watch ?? (async () => ({ status: 'completed' as const, usage: USAGE })))();
    },
    async cancelUpstreamResponse(input) {
      cancels.push(input.id);
      return { ...USAGE, outputTokens: 3 };
    },
    async closeBackgroundResponse(input) {
      closes.push(input);
      return { status: input.end?.status ?? 'completed' };
    },
  };
  const taskQueue = `resp-${randomUUID()}`;
  const id = `resp_${randomUUID().replace(/-/g, '')}${'0'.repeat(16)}`;
  const input: BackgroundResponseInput = {
    id,
    keyId: 'key_test',
    requestId: 'req_test',
    model: 'o3-pro',
    channels: (opts.channels ?? ['primary']).map((channel) => ({ channel, pollMs: 100, submitAttempts: 2 })),
    body: { input: 'hello' },
    previousResponseId: null,
    upstreamPreviousId: null,
    deadline: Date.now() + 60_000,
    retryInitialMs: 20,
    retryMaxMs: 100,
  };
  const worker = await Worker.create({ connection: environment().nativeConnection, taskQueue, workflowBundle: { codePath: workflowBundlePath() }, activities });
  const { result, runId } = await worker.runUntil(async () => {
    const handle = await environment().client.workflow.start(backgroundResponseWorkflow, { taskQueue, workflowId: id, args: [input] });
    if (opts.cancelWhileWatched) {
      await watched;
      await handle.cancel();
    }
    return { result: await handle.result(), runId: handle.firstExecutionRunId };
  });
  await recordHistories(environment(), shape, id, runId);
  return { result, submits, closes, cancels };
}

test('completed: created once, watched to its end, closed with the usage the watch reported', async () => {
  const { result, submits, closes, cancels } = await run('response-completed', {});
  expect(result).toEqual({ status: 'completed' });
  expect(submits).toEqual(['primary']);
  expect(cancels).toEqual([]);
  expect(closes).toEqual([expect.objectContaining({ end: null, usage: USAGE })]);
});

test('failed upstream: closed as failed with the provider error', async () => {
  const error = { code: 'server_error', message: 'boom' };
  const { closes } = await run('response-failed', { watch: async () => ({ status: 'failed', usage: USAGE, error }) });
  expect(closes).toEqual([expect.objectContaining({ end: { status: 'failed', error } })]);
});

test('not taken on the first channel after its attempts: created on the next', async () => {
  const { submits, closes } = await run(
    'response-failover',
    {
      submit: async (input) => {
        if (input.channel === 'primary') throw ApplicationFailure.create({ message: 'HTTP 503', type: SUBMIT_FAILURE_TYPES.notAccepted });
        return { upstreamId: 'up_backup' };
      },
    },
    { channels: ['primary', 'backup'] },
  );
  expect(submits).toEqual(['primary', 'primary', 'backup']);
  expect(closes[0]?.end).toBeNull();
});

test('an unknown outcome keeps it on its channel: retried there under the same key, never on the next', async () => {
  const { submits } = await run(
    'response-failover-unknown',
    {
      submit: async (_input, attempt) => {
        if (attempt === 1) throw ApplicationFailure.create({ message: 'socket hang up', type: SUBMIT_FAILURE_TYPES.outcomeUnknown });
        return { upstreamId: 'up_1' };
      },
    },
    { channels: ['primary', 'backup'] },
  );
  expect(submits).toEqual(['primary', 'primary']);
});

test('a released hold refuses the run: nothing created, closed as failed', async () => {
  const { submits, closes } = await run('response-charge-refunded', {
    claim: async () => {
      throw ApplicationFailure.nonRetryable('its charge was refunded', FAILURE_TYPES.chargeNotLive);
    },
  });
  expect(submits).toEqual([]);
  expect(closes).toEqual([
    expect.objectContaining({ end: { status: 'failed', error: { code: 'charge_refunded', message: 'its charge was refunded' } }, usage: null }),
  ]);
});

test('cancelled while watched: the provider asked to cancel, the close bills what it reported', async () => {
  const { result, cancels, closes } = await run('response-cancelled', {}, { cancelWhileWatched: true });
  expect(result).toEqual({ status: 'cancelled' });
  expect(cancels).toHaveLength(1);
  expect(closes).toEqual([expect.objectContaining({ end: { status: 'cancelled' }, usage: { ...USAGE, outputTokens: 3 } })]);
});
