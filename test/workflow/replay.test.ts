/**
 * Replays saved histories of every workflow shape against the shipped bundle: a change to
 * workflow code that would break tasks in flight (a command added, removed or reordered
 * without `patched()`) fails here. The fixtures are histories of real runs recorded by the
 * workflow tests (`RECORD_HISTORIES=1 npm run test:workflow`); they are kept, never
 * re-recorded to make a change pass: a new shape adds files, an old one stays as long as
 * runs of it may be in flight anywhere.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Resource } from '@opentelemetry/resources';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Worker, type ReplayWorkerOptions } from '@temporalio/worker';
import { tracedWorkflowBundlePath, workflowBundlePath } from '../../src/config/paths';
import { tracedWorkerOptions } from '../../src/telemetry/temporal-tracing';
import { HISTORIES_DIR, quietRuntime, recordingViewSinks, type ViewPublish } from './harness';

/**
 * The shapes of a watched video task, recorded for every task type: `videoTaskWorkflow` (runs
 * begun before V2), as `v2-<shape>` `videoTaskWorkflowV2` (no patch markers), and as `v3-<shape>`
 * `videoTaskWorkflowV3` (every task started now: the submit's first attempt in the first workflow task).
 */
const WATCHED_TASK_SHAPES = [
  'watched-completed',
  'watched-remix',
  'watched-failed',
  'watched-rejected',
  'watched-charge-refunded',
  'watched-deadline',
  'watched-40-polls',
  'watched-cancelled',
  'watched-cancelled-submit',
  'watched-cancelled-unclaimed',
  'watched-failover',
  'watched-failover-unknown',
  'watched-failover-rejected',
  // With the completion-webhook announce (a local activity marker after the terminal state).
  'watched-completed-webhook',
  'watched-failed-webhook',
  'watched-cancelled-webhook',
  'announce-refused',
  // Recorded with tracing on (tracing.test.ts): trace context in its start and activity headers.
  'traced-completed',
];

/** Every shape a task or character run can take; each must have a saved history. */
const SHAPES = [
  // The first type's polling loop, before the watching step.
  'video-completed',
  'video-remix',
  'video-failed',
  'video-rejected',
  'video-charge-refunded',
  'video-deadline',
  'video-continue-as-new',
  'video-continue-as-new.run2',
  ...WATCHED_TASK_SHAPES,
  ...WATCHED_TASK_SHAPES.map((shape) => `v2-${shape}`),
  ...WATCHED_TASK_SHAPES.map((shape) => `v3-${shape}`),
  // V3 only: a first attempt that failed, then the submit as a step; a submit that fetches a URL,
  // and one whose first workflow task waited for a worker with no limit in its input (the first
  // V3 runs), a step from the start; a first workflow task as late with no limit, the first try in it.
  'v3-watched-first-try-failed',
  'v3-watched-url-images',
  'v3-watched-late-first-task',
  'v3-watched-late-first-task-no-limit',
  // The webhook delivery workflow: acknowledged after retries, given up at the end of its window, refused at once.
  'webhook-delivered',
  'webhook-given-up',
  'webhook-undeliverable',
  // Background responses: completed, failed upstream, failed over, kept on its channel, refused, cancelled while watched.
  'response-completed',
  'response-failed',
  'response-failover',
  'response-failover-unknown',
  'response-charge-refunded',
  'response-cancelled',
  'character-completed',
  'character-failed',
];

const files = fs.existsSync(HISTORIES_DIR)
  ? fs
      .readdirSync(HISTORIES_DIR)
      .filter((f) => f.endsWith('.json'))
      .sort()
  : [];

test('a saved history exists for every workflow shape', () => {
  expect(files.map((f) => f.replace(/\.json$/, ''))).toEqual(expect.arrayContaining(SHAPES));
});

async function replayAll(options: ReplayWorkerOptions): Promise<void> {
  quietRuntime();
  const histories = files.map((file) => ({
    workflowId: file.replace(/\.json$/, ''),
    history: JSON.parse(fs.readFileSync(path.join(HISTORIES_DIR, file), 'utf8')) as unknown,
  }));
  const replayed: string[] = [];
  const failures: string[] = [];
  for await (const result of Worker.runReplayHistories(options, histories)) {
    replayed.push(result.workflowId);
    if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
  }
  expect(failures).toEqual([]);
  // Both sorted as ids: files sort by name, where `a-b.json` comes before `a.json`.
  expect(replayed.sort()).toEqual(histories.map((h) => h.workflowId).sort());
}

test('every saved history replays against the shipped workflow bundle without nondeterminism, and a replay publishes no view', async () => {
  const published = new Map<string, ViewPublish[]>();
  await replayAll({ workflowBundle: { codePath: workflowBundlePath() }, sinks: recordingViewSinks(published) });
  expect([...published.keys()]).toEqual([]);
}, 60_000);

/**
 * Tracing may be turned on while tasks are in flight: the traced bundle, with the interceptors
 * and sink a traced worker installs (the same function builds them), must replay every history
 * recorded without it. Spans go to an in-memory processor; none is exported during a replay.
 */
test('every saved history replays against the traced workflow bundle (tracing on) without nondeterminism', async () => {
  const exported = new InMemorySpanExporter();
  const traced = tracedWorkerOptions({ processor: new SimpleSpanProcessor(exported), resource: new Resource({ 'service.name': 'replay' }) });
  await replayAll({ workflowBundle: { codePath: tracedWorkflowBundlePath() }, ...traced, sinks: { ...traced.sinks, ...recordingViewSinks() } });
  expect(exported.getFinishedSpans()).toEqual([]);
}, 60_000);
