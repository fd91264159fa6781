/**
 * The step that watches a background response (src/activities/response-activities.ts) against
 * the simulator over real HTTP: its heartbeats follow changes of status and time, not polls,
 * since each is a write on the Temporal server and reads come from the store's record.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import pino from 'pino';
import { createResponseActivities } from '../../src/activities/response-activities';
import { DEFAULT_PRICES } from '../../src/billing/prices';
import type { TextChannel } from '../../src/config/channels';
import { responsesClient } from '../../src/providers/openai-responses/client';
import { migrate } from '../../src/store/migrations';
import { ResponseStore } from '../../src/store/responses';
import type { WatchResponseResult } from '../../src/workflows/background-response-types';
import { startSimulator, type RunningSimulator } from '../../simulator/server';
import { simResponsesChannel } from '../support/responses';
import { embeddedStore, type OpenedStore } from '../support/stores';

let sim: RunningSimulator;
let opened: OpenedStore;
let channel: TextChannel;
const timeouts = { requestMs: 5000, pollMs: 5000 };

beforeAll(async () => {
  sim = await startSimulator({ jobMs: 100 });
  opened = await embeddedStore();
  await migrate(opened.db);
  channel = simResponsesChannel(sim.url);
}, 60_000);
afterAll(async () => {
  await sim?.close();
  await opened?.cleanup();
});

test('a response polled a hundred times sends a heartbeat per change of status and per half timeout, not per poll', async () => {
  const upstream = await responsesClient(channel, timeouts).create(
    { model: 'o3-pro', input: 'bg [sim:ms=1500]', background: true },
    { idempotencyKey: 'watch-1' },
  );
  const activities = createResponseActivities({
    store: new ResponseStore(opened.db),
    billing: {
      settleResponse: async () => {
        throw new Error('a watch settles nothing');
      },
    },
    prices: DEFAULT_PRICES,
    channels: [channel],
    timeouts,
    announce: async () => ({ skipped: 'no_target' }),
    logger: pino({ level: 'silent' }),
    pollGridMs: 100,
  });
  const heartbeatTimeoutMs = 400;
  const env = new MockActivityEnvironment({ heartbeatTimeoutMs });
  const beats: unknown[] = [];
  env.on('heartbeat', (d: unknown) => beats.push(d));
  const pollMs = 10;
  const startedAt = Date.now();
  const result = await env.run((): Promise<WatchResponseResult> =>
    activities.watchBackgroundResponse({
      id: 'resp_watch_1',
      channel: 'sim',
      upstreamId: upstream.id,
      model: 'o3-pro',
      previousResponseId: null,
      pollMs,
      deadline: Date.now() + 60_000,
    }),
  );
  const elapsedMs = Date.now() - startedAt;
  expect(result.status).toBe('completed');
  // About 1.5 s of polls every 10 ms (each a round trip): dozens of polls at least.
  expect(elapsedMs).toBeGreaterThanOrEqual(1400);
  // The changes of status (queued, in_progress), then one per 200 ms with nothing else sent.
  expect(beats.length).toBeLessThanOrEqual(2 + Math.ceil(elapsedMs / (heartbeatTimeoutMs / 2)));
  expect(beats.length).toBeGreaterThanOrEqual(2);
  expect(beats.length).toBeLessThan(elapsedMs / pollMs / 5);
  expect(beats.at(-1)).toEqual({ status: 'in_progress' });
}, 30_000);
