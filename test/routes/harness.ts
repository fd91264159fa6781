/**
 * The Koa app in process, as Koa's own tests run theirs: the real middleware, routes, schemas,
 * views, key store and ledger (an embedded store in a temporary folder), with the task side
 * (Temporal) replaced by fakes a test scripts. For a route's rules that need no worker:
 * validation, authentication, error shapes, the mapping of domain errors.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type Koa from 'koa';
import pino from 'pino';
import { createApp } from '../../src/api/app';
import type { GatewayState } from '../../src/api/context';
import { BillingStore } from '../../src/billing/ledger';
import { loadPrices } from '../../src/billing/price-config';
import { TextHolds } from '../../src/billing/text-holds';
import { UsageRecorder } from '../../src/billing/usage';
import { isTextChannel, isVideoChannel, loadChannels } from '../../src/config/channels';
import { loadConfig } from '../../src/config/env';
import { BlobStore } from '../../src/files/blob-store';
import { UrlSigner } from '../../src/files/signed-url';
import { LocalRateLimiter } from '../../src/limits/rate-limiter';
import { PerKeySlots } from '../../src/limits/per-key-slots';
import { ChannelHealth } from '../../src/proxy/channel-health';
import { IdempotencyStore } from '../../src/store/idempotency';
import { KeyStore } from '../../src/store/keys';
import type { Db } from '../../src/store/db';
import { openStore } from '../../src/store/open';
import type { CharacterService } from '../../src/tasks/character-service';
import type { PaidTasks } from '../../src/tasks/paid-tasks';
import { initialState, type CharacterState, type TaskRequest, type TaskState } from '../../src/tasks/task';
import type { TaskService } from '../../src/tasks/task-service';

export const ADMIN_TOKEN = 'route-test-admin-token';

/** What the fake task side does: start answers the initial state unless `startFails` is set. */
export interface FakeTasks {
  startFails: Error | null;
  started: TaskRequest[];
  states: Map<string, TaskState>;
  /** The characters reads find (by id, for their owner). */
  characters: Map<string, CharacterState>;
}

export interface RouteApp {
  url: string;
  /** The Koa app itself, for what its routers mount. */
  app: Koa<GatewayState>;
  fakes: FakeTasks;
  /** Its file storage, for files a test puts in place. */
  blobs: BlobStore;
  /** Its store, for rows a test puts in place. */
  db: Db;
  /** A key issued in the store, with these limits. */
  issueKey(quota?: number): Promise<string>;
  close(): Promise<void>;
}

export async function startRouteApp(env: Record<string, string> = {}, opts: { consoleDir?: string } = {}): Promise<RouteApp> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-routes-'));
  const config = loadConfig({ DATA_DIR: dir, ADMIN_TOKEN, LOG_LEVEL: 'silent', PORT: '0', ...env });
  const logger = pino({ level: 'silent' });
  const db = await openStore(config);
  const keys = new KeyStore(db);
  await keys.start();
  const prices = loadPrices(undefined);
  const holds = new TextHolds(db, config.env.TEXT_MAX_IN_FLIGHT_PER_KEY, logger, config.env.TEXT_HOLD_ORPHAN_SECONDS);
  await holds.start();
  const idempotency = new IdempotencyStore(db);
  idempotency.start();
  const fakes: FakeTasks = { startFails: null, started: [], states: new Map(), characters: new Map() };
  const paid = {
    async start(request: TaskRequest): Promise<TaskState> {
      if (fakes.startFails) throw fakes.startFails;
      fakes.started.push(request);
      const state = initialState(request);
      fakes.states.set(request.taskId, state);
      return state;
    },
    async chargeAhead(): Promise<void> {},
    async release(): Promise<void> {},
    async createCharacter(): Promise<never> {
      throw fakes.startFails ?? new Error('the fake task side makes no characters');
    },
  };
  const tasks = {
    async get(id: string, ownerId: string): Promise<TaskState | null> {
      const state = fakes.states.get(id);
      return state && state.ownerId === ownerId ? state : null;
    },
  };
  const characters = {
    async get(id: string, ownerId: string): Promise<CharacterState | null> {
      const character = fakes.characters.get(id);
      return character && character.ownerId === ownerId ? character : null;
    },
    async library(ownerId: string, limit: number): Promise<CharacterState[]> {
      return [...fakes.characters.values()].filter((c) => c.ownerId === ownerId).slice(0, limit);
    },
  };
  const channels = loadChannels(config);
  const env_ = config.env;
  const blobs = new BlobStore(config.storageDir);
  const app = createApp({
    config,
    db,
    billing: new BillingStore(db),
    holds,
    idempotency,
    streams: new PerKeySlots(env_.MAX_STREAMS_PER_KEY),
    prices,
    limiter: new LocalRateLimiter(),
    // The fakes answer the calls the routes make; the rest of these classes is never reached here.
    paid: paid as unknown as PaidTasks,
    tasks: tasks as unknown as TaskService,
    characters: characters as unknown as CharacterService,
    channels: channels.filter(isVideoChannel),
    textChannels: channels.filter(isTextChannel),
    channelHealth: new ChannelHealth(env_.CHANNEL_FAILURE_THRESHOLD, env_.CHANNEL_COOLDOWN_SECONDS * 1000),
    usage: new UsageRecorder(db, logger, prices),
    textLimits: {
      timeoutMs: env_.TEXT_TIMEOUT_MS,
      idleMs: env_.TEXT_STREAM_IDLE_MS,
      defaultMaxTokens: env_.TEXT_DEFAULT_MAX_TOKENS,
      settleWaitMs: env_.TEXT_SETTLE_WAIT_MS,
    },
    logger,
    keys,
    blobs,
    signer: new UrlSigner('route-test-signing-secret', config.publicBaseUrl, env_.VIDEO_URL_TTL_SECONDS),
    adminToken: ADMIN_TOKEN,
    health: async () => ({ ok: true, temporal: 'ok', worker: 'ok' }),
    consoleDir: opts.consoleDir,
  });
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    app,
    fakes,
    blobs,
    db,
    async issueKey(quota?: number) {
      return (await keys.issue('route-test', quota === undefined ? {} : { quota })).key;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await holds.retire();
      await db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
