/**
 * Workflow tests the Temporal way: the shipped workflow bundle (dist/workflow-bundle.js) on a
 * local dev server (the installed `temporal` CLI; the SDK cannot download one here), with the
 * activities replaced by scripted fakes. Histories of the runs can be saved as the replay
 * fixtures (RECORD_HISTORIES=1, see replay.test.ts).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker, type InjectedSinks } from '@temporalio/worker';
import type { BillingActivities, SettleInput } from '../../src/billing/charge-activities';
import type { VideoActivities } from '../../src/activities/video-activities';
import type { WebhookActivities } from '../../src/webhooks/activities';
import type { AnnounceInput } from '../../src/webhooks/announce-types';
import { watchJob } from '../../src/activities/watch-job';
import { temporalCliPath, workflowBundlePath } from '../../src/config/paths';
import { SEARCH_ATTRIBUTES } from '../../src/temporal/search-attributes';
import type { TaskState } from '../../src/tasks/task';
import type { TaskViewSinks } from '../../src/workflows/task-view-sink';
import type { PollResult } from '../../src/providers/video-upstream';
import { FAILURE_TYPES, type ChannelPlan } from '../../src/workflows/video-task-types';

export const HISTORIES_DIR = path.join(__dirname, 'histories');

/** A run suggests continue-as-new after this many history events (the server's default is thousands). */
export const CONTINUE_AS_NEW_AFTER_EVENTS = 60;

/** The SDK logs errors only: the scenarios fail activities on purpose, and its warnings about them are noise here. */
export function quietRuntime(): void {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
}

export async function startEnvironment(): Promise<TestWorkflowEnvironment> {
  quietRuntime();
  for (const file of [temporalCliPath(), workflowBundlePath()]) {
    if (!fs.existsSync(file)) throw new Error(`${file} is missing: run the tests with \`npm test\` (it installs and builds first).`);
  }
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: temporalCliPath() },
      ip: '127.0.0.1',
      extraArgs: [
        ...SEARCH_ATTRIBUTES.flatMap((sa) => ['--search-attribute', `${sa.name}=Keyword`]),
        '--dynamic-config-value',
        `limit.historyCount.suggestContinueAsNew=${CONTINUE_AS_NEW_AFTER_EVENTS}`,
      ],
    },
  });
}

/** The dev server of one test file: started before its tests, stopped after them. */
export function environmentPerFile(): () => TestWorkflowEnvironment {
  let env: TestWorkflowEnvironment | undefined;
  beforeAll(async () => {
    env = await startEnvironment();
  }, 120_000);
  afterAll(async () => {
    await env?.teardown();
  });
  return () => {
    if (!env) throw new Error('the workflow environment has not started');
    return env;
  };
}

export type Activities = VideoActivities & BillingActivities & Pick<WebhookActivities, 'announceTerminal'>;

/** What the fakes were asked, in order. */
export interface Calls {
  names: string[];
  settled: SettleInput[];
  announced: AnnounceInput[];
}

export const PLAN: ChannelPlan = {
  channel: 'sim-video',
  upstreamModel: 'sim-model',
  pollMs: 100,
  expectedJobMs: 2000,
  retryInitialMs: 100,
  retryMaxMs: 200,
};

/**
 * Fakes of every activity: a plan, a job id, polls that succeed on `succeedOnPoll`, a stored
 * file. `overrides` replace any of them for a scenario.
 */
export function fakeActivities(overrides: Partial<Activities> = {}, options: { succeedOnPoll?: number } = {}): { activities: Activities; calls: Calls } {
  const calls: Calls = { names: [], settled: [], announced: [] };
  let polls = 0;
  const succeedOnPoll = options.succeedOnPoll ?? 3;
  const base: Activities = {
    async planChannel(input) {
      return { ...PLAN, channel: input.channel ?? PLAN.channel };
    },
    async enhancePrompt(input) {
      return `${input.prompt}, cinematic`;
    },
    async createCharacter(input) {
      return { id: `up_char_${input.taskId}`, name: input.name ?? 'cast' };
    },
    async storeProfilePicture(input) {
      return `characters/${input.characterId}.png`;
    },
    async submitVideo(input) {
      return `job_${input.request.taskId}`;
    },
    async submitRemix(input) {
      return `job_remix_${input.request.taskId}`;
    },
    async pollVideo(input): Promise<PollResult> {
      polls++;
      if (polls >= succeedOnPoll) return { phase: 'succeeded', download: { url: `http://upstream.invalid/${input.jobId}.mp4` } };
      return { phase: 'running', progress: Math.min(90, polls * 10) };
    },
    // The shipped watch loop, polling whichever pollVideo the scenario gives.
    async watchVideoJob(input) {
      // Every change of progress is sent, so that the scenarios see each one.
      return watchJob(
        input,
        {
          poll: () => activities.pollVideo({ channel: input.channel, jobId: input.jobId }),
          pollLeadMs: 0,
          store: (download) => activities.storeVideo({ taskId: input.taskId, channel: input.channel, download }),
          asFailure: (err) => err,
        },
        // The worker's default grid: capped at a quarter of the harness's short poll interval.
        { progressEveryMs: 0, progressStep: 1, pollGridMs: 100 },
      );
    },
    async storeVideo(input) {
      return { key: `videos/${input.taskId}.mp4`, contentType: 'video/mp4', bytes: 1024, chargeSettled: true };
    },
    async cancelUpstreamJob() {
      return 'cancelled';
    },
    async removeStoredVideo() {
      return undefined;
    },
    async claimCharge() {
      return 'claimed';
    },
    async settleTask(input) {
      calls.settled.push(input);
      return input.outcome === 'completed' ? 'completed' : 'refunded';
    },
    async announceTerminal(input) {
      calls.announced.push(input);
      return input.callbackUrl ? { eventId: `evt_${input.subject}_${input.id}_${input.outcome}` } : { skipped: 'no_target' };
    },
  };
  const merged = { ...base, ...overrides };
  // Every call is recorded by name, whichever implementation answers it.
  const activities = Object.fromEntries(
    Object.entries(merged).map(([name, fn]) => [
      name,
      (...args: unknown[]) => {
        calls.names.push(name);
        return (fn as (...a: unknown[]) => unknown)(...args);
      },
    ]),
  ) as unknown as Activities;
  return { activities, calls };
}

export { taskRequest } from '../support/task-request';

/** An activity failure the workflow turns into a failed task without retrying. */
export function rejected(message: string, type: keyof typeof FAILURE_TYPES = 'upstreamRejected'): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, FAILURE_TYPES[type]);
}

/** A task's publishes to its view, as the gateway's worker would write them: what the sink was called with, per task id. */
export type ViewPublish = { seq: number; state: TaskState };
export const viewPublishes = new Map<string, ViewPublish[]>();

/** The `taskViews` sink of a test worker: it records each call in `into`, by workflow id. */
export function recordingViewSinks(into: Map<string, ViewPublish[]> = viewPublishes): InjectedSinks<TaskViewSinks> {
  return {
    taskViews: {
      publish: {
        fn: (info, state, seq) => {
          into.set(info.workflowId, [...(into.get(info.workflowId) ?? []), { seq, state }]);
        },
        callDuringReplay: false,
      },
    },
  };
}

/** A worker of the shipped bundle and these activities on `taskQueue`, not yet running. */
export function workerOn(env: TestWorkflowEnvironment, activities: Activities, taskQueue: string): Promise<Worker> {
  return Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: { codePath: workflowBundlePath() },
    activities,
    sinks: recordingViewSinks(),
    // Progress heartbeats reach the server within a second, as from the gateway's worker.
    maxHeartbeatThrottleInterval: '1s',
  });
}

/** Runs `body` with a worker of the shipped bundle and these activities on a queue of its own. */
export async function withWorker<T>(env: TestWorkflowEnvironment, activities: Activities, body: (taskQueue: string) => Promise<T>): Promise<T> {
  const taskQueue = `wf-${randomUUID()}`;
  const worker = await workerOn(env, activities, taskQueue);
  return worker.runUntil(body(taskQueue));
}

/**
 * Saves every run of a workflow, from `firstRunId` along its continue-as-new chain, as replay
 * fixtures `<shape>.json`, `<shape>.run2.json`, ... when RECORD_HISTORIES is set (`v2-<shape>.json`
 * for a run of a type's second version).
 */
export async function recordHistories(env: TestWorkflowEnvironment, shape: string, workflowId: string, firstRunId: string): Promise<void> {
  if (!process.env.RECORD_HISTORIES) return;
  fs.mkdirSync(HISTORIES_DIR, { recursive: true });
  // A later version of a workflow type (`...V2`) saves under its own prefix (`v2-`), so recording
  // never overwrites the histories of the earlier type, whose runs may still be in flight.
  const { type } = await env.client.workflow.getHandle(workflowId, firstRunId).describe();
  const version = /V(\d+)$/.exec(type)?.[1];
  const saved = version ? `v${version}-${shape}` : shape;
  let runId: string | null | undefined = firstRunId;
  for (let run = 1; runId; run++) {
    // The CLI writes the JSON that Temporal's tools read (historyToJSON trips over jest's module registry).
    const json = execFileSync(
      temporalCliPath(),
      ['workflow', 'show', '--address', env.address, '--workflow-id', workflowId, '--run-id', runId, '--output', 'json'],
      { encoding: 'utf8' },
    );
    fs.writeFileSync(path.join(HISTORIES_DIR, run === 1 ? `${saved}.json` : `${saved}.run${run}.json`), json.endsWith('\n') ? json : `${json}\n`);
    const history = JSON.parse(json) as { events: { workflowExecutionContinuedAsNewEventAttributes?: { newExecutionRunId?: string } }[] };
    runId = history.events[history.events.length - 1]?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
  }
}
