import Router from '@koa/router';
import { z } from 'zod';
import type { TextChannel } from '../../config/channels';
import type { ChannelHealth } from '../../proxy/channel-health';
import type { ApiKey, KeyStore } from '../../store/keys';
import type { UsageRecorder } from '../../store/usage';
import type { GatewayState } from '../context';
import { NotFoundError } from '../errors';
import { jsonBody } from '../middleware/json-body';
import { parseOrThrow } from '../schemas/zod-error';

const createKeyBody = z.strictObject({ name: z.string().trim().min(1).max(200) });

const keyView = (k: ApiKey) => ({ id: k.id, object: 'api_key', name: k.name, key_hint: k.keyHint, created_at: k.createdAt });

export interface AdminDeps {
  keys: KeyStore;
  usage: UsageRecorder;
  textChannels: readonly TextChannel[];
  channelHealth: ChannelHealth;
}

const usageQuery = z.strictObject({ limit: z.coerce.number().int().min(1).max(1000).default(100) });

/**
 * Behind ADMIN_TOKEN: keys (issue with the secret shown once, list without secrets,
 * revoke), a key's text usage, and the text channels' health.
 */
export function adminRoutes({ keys, usage, textChannels, channelHealth }: AdminDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ prefix: '/admin' });

  router.post('/keys', jsonBody(64 * 1024), async (ctx) => {
    const { name } = parseOrThrow(createKeyBody, ctx.request.body);
    const issued = await keys.issue(name);
    ctx.status = 201;
    ctx.body = { id: issued.id, name: issued.name, key: issued.key, created_at: issued.createdAt };
    ctx.state.log.info({ keyId: issued.id }, 'key issued');
  });

  router.get('/keys', async (ctx) => {
    ctx.body = { object: 'list', data: (await keys.list()).map(keyView) };
  });

  router.delete('/keys/:id', async (ctx) => {
    if (!(await keys.revoke(ctx.params.id ?? ''))) throw new NotFoundError(`No live key with id '${ctx.params.id}'.`, 'id');
    ctx.body = { id: ctx.params.id, object: 'api_key.deleted', deleted: true };
    ctx.state.log.info({ keyId: ctx.params.id }, 'key revoked');
  });

  router.get('/keys/:id/usage', async (ctx) => {
    const key = (await keys.list()).find((k) => k.id === ctx.params.id);
    if (!key) throw new NotFoundError(`No key with id '${ctx.params.id}'.`, 'id');
    const { limit } = parseOrThrow(usageQuery, ctx.query);
    ctx.body = { object: 'usage', key_id: key.id, totals: await usage.totals(key.id), recent: await usage.recent(key.id, limit) };
  });

  router.get('/channels', (ctx) => {
    ctx.body = { object: 'list', data: channelHealth.view(textChannels) };
  });

  return router;
}
