import Koa from 'koa';
import Router from '@koa/router';
import type { Logger } from 'pino';
import type { TextChannel, VideoChannel } from '../config/channels';
import type { ChannelHealth } from '../proxy/channel-health';
import type { ProxyLimits } from '../proxy/text-proxy';
import type { RateLimiter } from '../limits/rate-limiter';
import type { BalanceCache } from '../store/balance-cache';
import type { BillingStore } from '../store/billing';
import type { Db } from '../store/db';
import type { UsageRecorder } from '../store/usage';
import type { PaidTasks } from '../tasks/paid-tasks';
import type { Config } from '../config/env';
import type { BlobStore } from '../storage/blob-store';
import type { UrlSigner } from '../storage/signed-url';
import type { KeyStore } from '../store/keys';
import type { CharacterService } from '../tasks/character-service';
import type { TaskService } from '../tasks/task-service';
import type { GatewayState } from './context';
import type { HealthReport } from './health';
import { adminAuth } from './middleware/admin-auth';
import { bearerAuth } from './middleware/auth';
import { openAiErrors } from './middleware/errors';
import { requestContext } from './middleware/request-context';
import { adminRoutes } from './routes/admin';
import { billingRoutes } from './routes/billing';
import { fileRoutes } from './routes/files';
import { videoRoutes } from './routes/video';
import { videosRoutes } from './routes/videos';
import { chatCompletionsRoutes } from './routes/chat-completions';
import { characterRoutes } from './routes/characters';
import { messagesRoutes } from './routes/messages';
import { modelRoutes } from './routes/models';

export interface ApiDeps {
  config: Config;
  channels: readonly VideoChannel[];
  textChannels: readonly TextChannel[];
  channelHealth: ChannelHealth;
  usage: UsageRecorder;
  db: Db;
  billing: BillingStore;
  balances: BalanceCache;
  paid: PaidTasks;
  limiter: RateLimiter;
  textLimits: ProxyLimits;
  characters: CharacterService;
  logger: Logger;
  keys: KeyStore;
  tasks: TaskService;
  blobs: BlobStore;
  signer: UrlSigner;
  adminToken: string;
  health: () => Promise<HealthReport>;
}

/**
 * The HTTP edge, composed in order: request id + access log, error mapping, then the
 * route families, each behind the authentication it needs.
 */
export function createApp(deps: ApiDeps): Koa<GatewayState> {
  const app = new Koa<GatewayState>({ proxy: false });
  app.silent = true;
  app.use(requestContext(deps.logger));
  app.use(openAiErrors(deps.config.env.MAX_JSON_BODY_BYTES));

  const open = new Router<GatewayState>();
  open.get('/healthz', async (ctx) => {
    const report = await deps.health();
    ctx.status = report.ok ? 200 : 503;
    ctx.body = { status: report.ok ? 'ok' : 'unavailable', temporal: report.temporal, worker: report.worker };
  });
  app.use(open.routes());
  app.use(fileRoutes(deps.blobs, deps.signer).routes());

  const admin = new Router<GatewayState>();
  admin.use('/admin', adminAuth(deps.adminToken));
  admin.use(adminRoutes(deps).routes());
  app.use(admin.routes());

  // Before the /v1 router: these take x-api-key too, and messages answers in Anthropic's shape.
  app.use(messagesRoutes(deps).routes());
  app.use(modelRoutes(deps).routes());

  const v1 = new Router<GatewayState>();
  v1.use('/v1', bearerAuth(deps.keys, deps.limiter));
  v1.use(videoRoutes(deps).routes());
  v1.use(videosRoutes(deps).routes());
  v1.use(chatCompletionsRoutes(deps).routes());
  // Last: every router in front of chat completions is one more path match per text request.
  v1.use(billingRoutes(deps).routes());
  app.use(v1.routes());

  const motion = new Router<GatewayState>();
  motion.use('/motion/v1', bearerAuth(deps.keys, deps.limiter));
  motion.use(characterRoutes(deps).routes());
  app.use(motion.routes());
  return app;
}
