import Router from '@koa/router';
import { z } from 'zod';
import type { ApiKey, KeyStore } from '../../store/keys';
import type { GatewayState } from '../context';
import { NotFoundError } from '../errors';
import { jsonBody } from '../middleware/json-body';
import { parseOrThrow } from '../schemas/zod-error';

const createKeyBody = z.strictObject({ name: z.string().trim().min(1).max(200) });

const keyView = (k: ApiKey) => ({ id: k.id, object: 'api_key', name: k.name, key_hint: k.keyHint, created_at: k.createdAt });

/** Key management, behind ADMIN_TOKEN: issue (secret shown once), list (no secrets), revoke. */
export function adminRoutes(keys: KeyStore): Router<GatewayState> {
  const router = new Router<GatewayState>({ prefix: '/admin' });

  router.post('/keys', ...jsonBody(64 * 1024), async (ctx) => {
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

  return router;
}
