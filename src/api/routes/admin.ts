import { randomUUID } from 'node:crypto';
import Router from '@koa/router';
import type { TextChannel, VideoChannel } from '../../config/channels';
import type { Config } from '../../config/env';
import type { UrlSigner } from '../../files/signed-url';
import type { TaskService } from '../../tasks/task-service';
import { TaskList, UnknownCursor } from '../../tasks/task-list';
import { videoListItemView } from '../views/video-object';
import { upstreamView } from '../views/video-task';
import { adminChannelsView } from '../views/admin-channels';
import { ChannelErrorLog } from '../../store/channel-errors';
import { temporalWorkflowUrl } from '../views/temporal-links';
import type { ChannelHealth } from '../../proxy/channel-health';
import { auditLedger } from '../../billing/audit';
import { InsufficientBalance, UnlimitedKey, type BillingStore } from '../../billing/ledger';
import type { Db } from '../../store/db';
import type { ApiKey, KeyStore } from '../../store/keys';
import type { UsageRecorder } from '../../billing/usage';
import type { GatewayState } from '../context';
import { ConflictError, InvalidRequestError, NotFoundError } from '../errors';
import { jsonBody } from '../middleware/json-body';
import { adminTasksQuery, createKeyBody, keyListQuery, quotaBody, updateKeyBody, usageQuery } from '../schemas/admin-keys';
import { ledgerQuery } from '../schemas/ledger-query';
import { parseOrThrow } from '../schemas/zod-error';

/** A key as the admin API shows it: never its secret, with its limits. */
const keyView = (k: ApiKey) => ({
  id: k.id,
  object: 'api_key',
  name: k.name,
  key_hint: k.keyHint,
  created_at: k.createdAt,
  unlimited: !k.limited,
  rate_limit_rpm: k.rateLimitRpm,
  max_concurrent_tasks: k.maxConcurrentTasks,
  max_text_in_flight: k.maxTextInFlight,
});

export interface AdminDeps {
  config: Config;
  channels: readonly VideoChannel[];
  tasks: TaskService;
  signer: UrlSigner;
  db: Db;
  keys: KeyStore;
  billing: BillingStore;
  usage: UsageRecorder;
  textChannels: readonly TextChannel[];
  channelHealth: ChannelHealth;
}

/**
 * Behind ADMIN_TOKEN: keys (issue with the secret shown once, list without secrets, limits,
 * revoke), a key's balance, quota, ledger and text usage, the ledger audit, and the text
 * channels' health. Views of money flush the usage queued in this process first.
 */
export function adminRoutes({ config, channels, tasks, signer, db, keys, billing, usage, textChannels, channelHealth }: AdminDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ prefix: '/admin' });
  const channelErrors = new ChannelErrorLog(db);
  const taskList = new TaskList(db, tasks);
  const workflowUrl = (id: string) => temporalWorkflowUrl(config, id);

  /** The key with its balance (null when unlimited), what it has spent and its tasks in flight. */
  async function keyWithBalance(key: ApiKey) {
    await usage.flush(key.id);
    const view = await billing.view(key.id);
    return {
      ...keyView(key),
      revoked_at: key.revokedAt,
      balance: view?.balance ?? null,
      granted: view?.granted ?? 0,
      spent: view?.spent ?? 0,
      tasks_in_flight: view?.tasksInFlight ?? 0,
      text_in_flight: view?.textInFlight ?? 0,
      held: view?.held ?? 0,
    };
  }

  async function keyOr404(id: string | undefined): Promise<ApiKey> {
    const key = id ? await keys.get(id) : null;
    if (!key) throw new NotFoundError(`No key with id '${id}'.`, 'id');
    return key;
  }

  router.post('/keys', jsonBody(64 * 1024), async (ctx) => {
    const body = parseOrThrow(createKeyBody, ctx.request.body);
    const issued = await keys.issue(body.name, {
      quota: body.quota,
      rateLimitRpm: body.rate_limit_rpm,
      maxConcurrentTasks: body.max_concurrent_tasks,
      maxTextInFlight: body.max_text_in_flight,
    });
    ctx.status = 201;
    ctx.body = {
      id: issued.id,
      name: issued.name,
      key: issued.key,
      created_at: issued.createdAt,
      balance: body.quota ?? null,
      rate_limit_rpm: issued.rateLimitRpm,
      max_concurrent_tasks: issued.maxConcurrentTasks,
      max_text_in_flight: issued.maxTextInFlight,
    };
    ctx.state.log.info({ keyId: issued.id, quota: body.quota ?? 'unlimited' }, 'key issued');
  });

  router.get('/keys/:id', async (ctx) => {
    ctx.body = await keyWithBalance(await keyOr404(ctx.params.id));
  });

  router.patch('/keys/:id', jsonBody(64 * 1024), async (ctx) => {
    const body = parseOrThrow(updateKeyBody, ctx.request.body);
    const key = await keys.setLimits(ctx.params.id ?? '', {
      rateLimitRpm: body.rate_limit_rpm,
      maxConcurrentTasks: body.max_concurrent_tasks,
      maxTextInFlight: body.max_text_in_flight,
    });
    if (!key) throw new NotFoundError(`No live key with id '${ctx.params.id}'.`, 'id');
    ctx.body = await keyWithBalance(key);
    ctx.state.log.info({ keyId: key.id, rpm: key.rateLimitRpm, maxTasks: key.maxConcurrentTasks }, 'key limits changed');
  });

  /**
   * Adds (delta > 0) or removes (delta < 0) credits. An Idempotency-Key header makes a retried
   * call a no-op: the grant's ledger reference is derived from it and unique.
   */
  router.post('/keys/:id/quota', jsonBody(64 * 1024), async (ctx) => {
    const key = await keyOr404(ctx.params.id);
    const body = parseOrThrow(quotaBody, ctx.request.body);
    const idempotencyKey = ctx.get('idempotency-key').trim();
    if (idempotencyKey.length > 200) throw new InvalidRequestError('Idempotency-Key must be at most 200 characters.', 'Idempotency-Key');
    const ref = idempotencyKey ? `admin:${key.id}:${idempotencyKey}` : `admin:${randomUUID()}`;
    let balance: number;
    try {
      // A removal is checked against the balance: with this process's text usage written first.
      await usage.flush(key.id);
      balance = await billing.grant(key.id, body.delta, body.reason ?? (body.delta > 0 ? 'quota added' : 'quota removed'), ref);
    } catch (err) {
      if (err instanceof UnlimitedKey) {
        throw new ConflictError(`The key '${key.id}' is unlimited; quota applies to keys issued with a "quota".`, 'id', 'key_unlimited');
      }
      if (err instanceof InsufficientBalance) {
        throw new ConflictError(`Cannot remove ${-body.delta} credits: the balance is ${err.balance}.`, 'delta', 'insufficient_balance');
      }
      throw err;
    }
    ctx.body = { id: key.id, object: 'api_key.quota', balance };
    ctx.state.log.info({ keyId: key.id, delta: body.delta }, 'quota changed');
  });

  router.get('/keys/:id/ledger', async (ctx) => {
    const key = await keyOr404(ctx.params.id);
    const { limit, offset, ...filter } = parseOrThrow(ledgerQuery, ctx.query);
    await usage.flush(key.id);
    const data = await billing.ledger(key.id, limit, offset, filter);
    ctx.body = { object: 'list', key_id: key.id, data, has_more: data.length === limit };
  });

  /** The ledger audit of `npm run audit:ledger`, for a running gateway (the embedded store has one owner). */
  router.get('/audit', async (ctx) => {
    await usage.flush();
    ctx.body = await auditLedger(db);
  });

  /** With each key's balance and spending, read for all keys at once (two queries whatever the count). */
  router.get('/keys', async (ctx) => {
    const { include_revoked } = parseOrThrow(keyListQuery, ctx.query);
    await usage.flush();
    const [list, balances] = await Promise.all([keys.list(include_revoked), billing.balances()]);
    ctx.body = {
      object: 'list',
      data: list.map((k) => ({ ...keyView(k), revoked_at: k.revokedAt, balance: balances.get(k.id)?.balance ?? null, spent: balances.get(k.id)?.spent ?? 0 })),
    };
  });

  /** Video tasks across keys, newest first, with their owner, cost and Temporal UI link. */
  router.get('/tasks', async (ctx) => {
    const query = parseOrThrow(adminTasksQuery, ctx.query);
    let page;
    try {
      page = await taskList.adminPage({ after: query.after, limit: query.limit, keyId: query.key_id, model: query.model, status: query.status });
    } catch (err) {
      if (err instanceof UnknownCursor) throw new InvalidRequestError(`'after' names no video task: ${err.message}`, 'after', 'invalid_cursor');
      throw err;
    }
    const data = page.tasks.map((t) => ({
      ...videoListItemView(t.state, signer),
      key_id: t.keyId,
      cost: t.cost,
      temporal_ui_url: workflowUrl(t.state.id),
      ...upstreamView(t.state),
    }));
    ctx.body = { object: 'list', data, first_id: data[0]?.id ?? null, last_id: page.lastId, has_more: page.hasMore };
  });

  router.delete('/keys/:id', async (ctx) => {
    if (!(await keys.revoke(ctx.params.id ?? ''))) throw new NotFoundError(`No live key with id '${ctx.params.id}'.`, 'id');
    ctx.body = { id: ctx.params.id, object: 'api_key.deleted', deleted: true };
    ctx.state.log.info({ keyId: ctx.params.id }, 'key revoked');
  });

  router.get('/keys/:id/usage', async (ctx) => {
    const key = await keyOr404(ctx.params.id);
    const { limit } = parseOrThrow(usageQuery, ctx.query);
    ctx.body = { object: 'usage', key_id: key.id, totals: await usage.totals(key.id), recent: await usage.recent(key.id, limit) };
  });

  router.get('/channels', async (ctx) => {
    const videoErrors = await channelErrors.summaries(channels.map((c) => c.name));
    ctx.body = { object: 'list', data: adminChannelsView(channelHealth, textChannels, channels, videoErrors) };
  });

  return router;
}
