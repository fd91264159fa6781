/**
 * planChannel, the step that fixes a task's channels: the first by priority (then weight), the
 * others serving its model as its failover order with their submit settings; a remix or a cast
 * pinned to its source channel, with none.
 */
import { ApplicationFailure } from '@temporalio/common';
import { createVideoActivities, type VideoActivityDeps } from '../../src/activities/video-activities';
import type { VideoChannel } from '../../src/config/channels';
import { FAILURE_TYPES } from '../../src/workflows/video-task-types';

function channel(name: string, priority: number, models: Record<string, string>, extra: Partial<VideoChannel> = {}): VideoChannel {
  return {
    name,
    type: 'openai-videos',
    baseUrl: `https://${name}.test`,
    apiKey: 'k',
    models,
    priority,
    weight: 1,
    pollMs: 1000,
    expectedJobMs: 60_000,
    sendExtensions: true,
    pollByList: false,
    submitAttempts: 3,
    simulated: false,
    ...extra,
  };
}

const channels = [
  channel('backup', 0, { 'motion-2': 'sora-2-backup' }, { submitAttempts: 5 }),
  channel('main', 10, { 'motion-2': 'sora-2', 'motion-2-pro': 'sora-2-pro' }),
  channel('last', -5, { 'motion-2': 'sora-2' }),
];

// planChannel reads only the channels and the retry settings: the other dependencies are never touched.
const activities = createVideoActivities({
  channels,
  retryInitialMs: 100,
  retryMaxMs: 400,
  upstreamTimeoutMs: 1000,
  progressEveryMs: 0,
  progressStep: 1,
  pollGridMs: 0,
} as unknown as VideoActivityDeps);

test('the first channel by priority, the others serving the model as fallbacks, each with its own settings', async () => {
  const plan = await activities.planChannel({ model: 'motion-2' });
  expect(plan).toMatchObject({ channel: 'main', upstreamModel: 'sora-2', submitAttempts: 3, retryInitialMs: 100 });
  expect(plan.fallbacks?.map((f) => [f.channel, f.upstreamModel, f.submitAttempts])).toEqual([
    ['backup', 'sora-2-backup', 5],
    ['last', 'sora-2', 3],
  ]);
});

test('a model with one channel has no fallbacks', async () => {
  expect((await activities.planChannel({ model: 'motion-2-pro' })).fallbacks).toEqual([]);
});

test('a task pinned to a channel (remix, cast) gets that channel and no fallbacks', async () => {
  const plan = await activities.planChannel({ model: 'motion-2', channel: 'backup' });
  expect(plan).toMatchObject({ channel: 'backup', fallbacks: [] });
});

test.each([
  ['a model no channel serves', { model: 'vidgen3' }],
  ['a pinned channel no longer configured', { model: 'motion-2', channel: 'gone' }],
])('%s: NoChannel, not retried', async (_what, input) => {
  const err: unknown = await activities.planChannel(input).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ApplicationFailure);
  expect(err).toMatchObject({ type: FAILURE_TYPES.noChannel, nonRetryable: true });
});
