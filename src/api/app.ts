import Koa, { type Middleware } from 'koa';
import Router from '@koa/router';
import type { Logger } from 'pino';
import type { TextChannel, VideoChannel } from '../config/channels';
import type { ChannelHealth } from '../proxy/channel-health';
import type { RateLimiter } from '../limits/rate-limiter';
import type { BillingStore } from '../billing/ledger';
import type { TextHoldSource } from '../billing/text-holds';
import type { IdempotencyStore } from '../store/idempotency';
import type { PriceTable } from '../billing/prices';
import type { Db } from '../store/db';
import type { UsageRecorder } from '../billing/usage';
import type { PaidTasks } from '../tasks/paid-tasks';
import type { Config } from '../config/env';
import type { BlobStore } from '../files/blob-store';
import type { UrlSigner } from '../files/signed-url';
import type { KeyStore } from '../store/keys';
import type { CharacterService } from '../tasks/character-service';
import type { TaskService } from '../tasks/task-service';
import type { GatewayState } from './context';
import { createReadinessProbe, type HealthReport } from './health';
import type { PerKeySlots } from '../limits/per-key-slots';
import type { TextRouteDeps } from './text-proxy-route';
import { AuthFailureLimit } from '../limits/auth-failures';
import { LocalRateLimiter } from '../limits/rate-limiter';
import { adminAuth } from './middleware/admin-auth';
import { anthropicErrorBody } from './middleware/anthropic-errors';
import { bearerAuth } from './middleware/auth';
import { authFailureGate } from './middleware/auth-failures';
import { openAiErrors } from './middleware/errors';
import { httpMetrics } from './middleware/http-metrics';
import { requestContext } from './middleware/request-context';
import { requestTarget } from './middleware/request-target';
import { adminRoutes } from './routes/admin';
import { adminWebhookRoutes, keyWebhookRoutes } from './routes/webhooks';
import { billingRoutes } from './routes/billing';
import { fileRoutes } from './routes/files';
import { videoRoutes } from './routes/video-tasks';
import { videosRoutes } from './routes/video-objects';
import { chatCompletionsRoutes } from './routes/chat-completions';
import { responsesRoutes } from './routes/responses';
import { ResponseStore } from '../store/responses';
import { WebhookStore } from '../store/webhooks';
import type { BackgroundResponses } from '../responses/background-port';
import { characterRoutes } from './routes/characters';
import { messagesRoutes } from './routes/messages';
import { metricsRoutes } from './routes/metrics';
import { modelRoutes } from './routes/models';
import { serveOpenApi } from './openapi/serve';
import { ConsoleSessions } from '../store/console-sessions';
import type { ConsoleAuth } from './console/cookie-auth';
import { consoleSecurityHeaders } from './console/security-headers';
import { consoleAssets } from './console/static-assets';
import { sessionRoutes } from './console/session-routes';

export interface ApiDeps {
  config: Config;
  channels: readonly VideoChannel[];
  textChannels: readonly TextChannel[];
  channelHealth: ChannelHealth;
  usage: UsageRecorder;
  db: Db;
  billing: BillingStore;
  holds: TextHoldSource;
  idempotency: IdempotencyStore;
  /** Streams open per key in this process (MAX_STREAMS_PER_KEY): text, and video chat completions. */
  streams: PerKeySlots;
  prices: PriceTable;
  paid: PaidTasks;
  limiter: RateLimiter;
  textLimits: TextRouteDeps['textLimits'];
  characters: CharacterService;
  logger: Logger;
  keys: KeyStore;
  tasks: TaskService;
  blobs: BlobStore;
  signer: UrlSigner;
  adminToken: string;
  health: () => Promise<HealthReport>;
  /** A server span per request (middleware/request-spans.ts), when tracing is on. */
  requestSpans?: Middleware<GatewayState>;
  /** Console sign-ins; absent = a store of its own without the periodic sweep (expired rows still go when presented). */
  consoleSessions?: ConsoleSessions;
  /** The built console (dist/console); absent or missing = /console answers 503 with how to build it. */
  consoleDir?: string;
  /** The Responses API's records; absent = a store over `db`. */
  responses?: ResponseStore;
  /** Runs `background: true` responses; absent = POST /v1/responses refuses them (400). */
  backgroundResponses?: BackgroundResponses;
}

/**
 * Paths whose errors take Anthropic's shape even when no route answered them (a malformed query
 * string, a route of Anthropic's API the gateway does not serve, such as message batches): the
 * Anthropic SDK's callers get its own error classes there.
 */
const anthropicShaped = (path: string): boolean => path === '/v1/messages' || path.startsWith('/v1/messages/');

/**
 * The HTTP edge, composed in order: the request's span (tracing on), request id + access log,
 * error mapping, the request target's check (a path or query that does not decode is a 400),
 * the per-address limit of failed authentications, then the route families, each behind the
 * authentication it needs, the text endpoints first.
 */
export function createApp(deps: ApiDeps): Koa<GatewayState> {
  const app = new Koa<GatewayState>({ proxy: false });
  app.silent = true;
  const env = deps.config.env;
  const publicOrigin = new URL(deps.config.publicBaseUrl).origin;
  const consoleAuth: ConsoleAuth = {
    sessions: deps.consoleSessions ?? new ConsoleSessions(deps.db, { idleMinutes: env.CONSOLE_SESSION_IDLE_MINUTES, maxHours: env.CONSOLE_SESSION_MAX_HOURS }),
    keys: deps.keys,
    trustProxy: env.TRUST_PROXY,
    publicOrigin,
  };
  const routeDeps = { ...deps, consoleAuth };
  // Outermost: the request's trace context covers everything below it, the access log included.
  if (deps.requestSpans) app.use(deps.requestSpans);
  app.use(requestContext(deps.logger));
  app.use(httpMetrics());
  // Outside the error mapping, so an error answered under /console carries them too.
  app.use(consoleSecurityHeaders(publicOrigin));
  // An error no route family answered: in Anthropic's shape under /v1/messages, OpenAI's elsewhere.
  app.use(openAiErrors(env.MAX_JSON_BODY_BYTES, { paths: anthropicShaped, body: (err, ctx) => anthropicErrorBody(err, ctx.state.requestId) }));
  app.use(requestTarget());
  app.use(
    authFailureGate(
      env.AUTH_FAILURES_PER_MINUTE > 0
        ? {
            // Shared through Redis like the keys' limits; in-process otherwise, in a limiter of its own
            // so that a flood of addresses never evicts a key's bucket.
            limit: new AuthFailureLimit(deps.limiter.kind === 'redis' ? deps.limiter : new LocalRateLimiter(), env.AUTH_FAILURES_PER_MINUTE),
            trustProxy: env.TRUST_PROXY,
          }
        : null,
    ),
  );

  // The text endpoints first, the busiest paths: every router in front of them is one more
  // path match and one more layer per request. /v1/messages takes x-api-key too and answers in
  // Anthropic's shape (its router has its own key check).
  app.use(messagesRoutes(routeDeps).routes());
  const text = new Router<GatewayState>();
  text.use('/v1/chat/completions', bearerAuth(deps.keys, deps.limiter, consoleAuth));
  text.use(chatCompletionsRoutes(deps).routes());
  app.use(text.routes());

  // Health (see health.ts): liveness, readiness, and the detailed report.
  const open = new Router<GatewayState>();
  const readiness = createReadinessProbe({ db: deps.db, health: deps.health });
  open.get('/livez', (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { status: 'ok' };
  });
  open.get('/readyz', async (ctx) => {
    const report = await readiness();
    ctx.set('Cache-Control', 'no-store');
    ctx.status = report.ready ? 200 : 503;
    ctx.body = { status: report.ready ? 'ready' : 'unavailable', store: report.store, temporal: report.temporal, worker: report.worker };
  });
  open.get('/healthz', async (ctx) => {
    const report = await deps.health();
    ctx.status = report.ok ? 200 : 503;
    ctx.body = { status: report.ok ? 'ok' : 'unavailable', temporal: report.temporal, worker: report.worker };
  });
  // The OpenAPI document of this API (openapi/), like the probes without a key.
  open.get('/openapi.json', serveOpenApi(deps.config.publicBaseUrl));
  app.use(open.routes());
  app.use(metricsRoutes([deps.adminToken, ...(env.METRICS_TOKEN ? [env.METRICS_TOKEN] : [])]).routes());
  app.use(fileRoutes(deps.blobs, deps.signer).routes());

  // The console (docs/console.md): its sign-in API, then its single-page app.
  app.use(sessionRoutes({ consoleAuth, adminToken: deps.adminToken, temporalUiUrl: deps.config.temporalUiUrl }).routes());
  app.use(consoleAssets(deps.consoleDir));

  const admin = new Router<GatewayState>();
  admin.use('/admin', adminAuth(deps.adminToken, consoleAuth));
  admin.use(adminRoutes(deps).routes());
  admin.use(adminWebhookRoutes(deps).routes());
  app.use(admin.routes());

  // Before the /v1 router: /v1/models takes x-api-key too.
  app.use(modelRoutes(routeDeps).routes());

  const v1 = new Router<GatewayState>();
  v1.use('/v1', bearerAuth(deps.keys, deps.limiter, consoleAuth));
  v1.use(videoRoutes(deps).routes());
  v1.use(videosRoutes(deps).routes());
  v1.use(responsesRoutes({ ...deps, responses: deps.responses ?? new ResponseStore(deps.db), webhooks: new WebhookStore(deps.db) }).routes());
  v1.use(keyWebhookRoutes(deps).routes());
  v1.use(billingRoutes(deps).routes());
  app.use(v1.routes());

  const motion = new Router<GatewayState>();
  motion.use('/motion/v1', bearerAuth(deps.keys, deps.limiter, consoleAuth));
  motion.use(characterRoutes(deps).routes());
  app.use(motion.routes());
  return app;
}
