import Router from '@koa/router';
import type { Config } from '../../config/env';
import type { Db } from '../../store/db';
import type { KeyStore } from '../../store/keys';
import { WebhookStore } from '../../store/webhooks';
import { webhookUrlProblem } from '../../webhooks/target-url';
import { callerKey, type GatewayState } from '../context';
import { InvalidRequestError, NotFoundError } from '../errors';
import { jsonBody } from '../middleware/json-body';
import { webhookDeliveriesQuery, webhookEndpointBody } from '../schemas/webhooks';
import { parseOrThrow } from '../schemas/zod-error';
import { webhookDeliveryView, webhookEndpointView } from '../views/webhooks';

export interface WebhookRouteDeps {
  config: Config;
  db: Db;
  keys: KeyStore;
}

/**
 * Behind ADMIN_TOKEN: a key's completion-webhook endpoint (set, read, clear), its signing secret
 * (made by the first PUT, rotated on demand; shown only in those answers), and its events with
 * every delivery attempt.
 */
export function adminWebhookRoutes({ config, db, keys }: WebhookRouteDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ prefix: '/admin/keys/:id/webhook' });
  const webhooks = new WebhookStore(db);
  const policy = { allowHttp: config.env.WEBHOOK_ALLOW_HTTP, allowPrivate: config.env.WEBHOOK_ALLOW_PRIVATE };

  async function keyIdOr404(id: string | undefined): Promise<string> {
    const key = id ? await keys.get(id) : null;
    if (!key) throw new NotFoundError(`No key with id '${id}'.`, 'id');
    return key.id;
  }

  router.get('/', async (ctx) => {
    const keyId = await keyIdOr404(ctx.params.id);
    ctx.body = webhookEndpointView(keyId, await webhooks.endpoint(keyId));
  });

  router.put('/', jsonBody(16 * 1024), async (ctx) => {
    const keyId = await keyIdOr404(ctx.params.id);
    const { url } = parseOrThrow(webhookEndpointBody, ctx.request.body);
    const problem = url === null ? null : webhookUrlProblem(url, policy);
    if (problem) throw new InvalidRequestError(`url ${problem}.`, 'url', 'invalid_webhook_url');
    const { endpoint, secret } = await webhooks.setEndpoint(keyId, url);
    ctx.body = { ...webhookEndpointView(keyId, endpoint), secret };
    ctx.state.log.info({ keyId, secretMade: secret !== null }, 'webhook endpoint set');
  });

  router.delete('/', async (ctx) => {
    const keyId = await keyIdOr404(ctx.params.id);
    const current = await webhooks.endpoint(keyId);
    ctx.body = webhookEndpointView(keyId, current ? (await webhooks.setEndpoint(keyId, null)).endpoint : null);
    ctx.state.log.info({ keyId }, 'webhook endpoint cleared');
  });

  router.post('/rotate', async (ctx) => {
    const keyId = await keyIdOr404(ctx.params.id);
    const { endpoint, secret } = await webhooks.rotate(keyId);
    ctx.body = { ...webhookEndpointView(keyId, endpoint), secret };
    ctx.state.log.info({ keyId }, 'webhook secret rotated');
  });

  router.get('/deliveries', async (ctx) => {
    const keyId = await keyIdOr404(ctx.params.id);
    const query = parseOrThrow(webhookDeliveriesQuery, ctx.query);
    const events = await webhooks.deliveries(keyId, { limit: query.limit, eventId: query.event_id });
    ctx.body = { object: 'list', key_id: keyId, data: events.map(webhookDeliveryView) };
  });

  return router;
}

/** A key's own completion-webhook events and their attempts (never another key's). */
export function keyWebhookRoutes({ db }: Pick<WebhookRouteDeps, 'db'>): Router<GatewayState> {
  const router = new Router<GatewayState>();
  const webhooks = new WebhookStore(db);
  router.get('/v1/webhooks/deliveries', async (ctx) => {
    const keyId = callerKey(ctx.state).id;
    const query = parseOrThrow(webhookDeliveriesQuery, ctx.query);
    const events = await webhooks.deliveries(keyId, { limit: query.limit, eventId: query.event_id });
    ctx.body = { object: 'list', key_id: keyId, data: events.map(webhookDeliveryView) };
  });
  return router;
}
