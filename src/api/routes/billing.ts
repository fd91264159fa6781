import Router from '@koa/router';
import type { BillingStore } from '../../billing/ledger';
import type { UsageRecorder } from '../../billing/usage';
import { callerKey, type GatewayState } from '../context';
import { parseOrThrow } from '../schemas/zod-error';
import { ledgerQuery } from '../schemas/ledger-query';
import { spendQuery } from '../schemas/spend-query';
import { usageQuery } from '../schemas/admin-keys';
import type { Db } from '../../store/db';
import { spendByBucket } from '../../billing/spend';

export interface BillingRouteDeps {
  db: Db;
  billing: BillingStore;
  usage: UsageRecorder;
}

/**
 * What a key can see of its own money: GET /v1/billing (balance, limits, spending, tasks in
 * flight, text usage by model), GET /v1/billing/ledger (its entries, newest first, filtered),
 * GET /v1/billing/spend (spending by model and UTC day or hour) and GET /v1/billing/usage
 * (its text usage: totals by model and the latest records).
 */
export function billingRoutes({ db, billing, usage }: BillingRouteDeps): Router<GatewayState> {
  const router = new Router<GatewayState>();

  router.get('/v1/billing', async (ctx) => {
    const key = callerKey(ctx.state);
    await usage.flush(key.id);
    const view = await billing.view(key.id);
    ctx.body = {
      object: 'billing',
      key_id: key.id,
      unlimited: !key.limited,
      balance: view?.balance ?? null,
      granted: view?.granted ?? 0,
      spent: view?.spent ?? 0,
      rate_limit_rpm: key.rateLimitRpm,
      max_concurrent_tasks: key.maxConcurrentTasks,
      tasks_in_flight: view?.tasksInFlight ?? 0,
      max_text_in_flight: key.maxTextInFlight,
      text_in_flight: view?.textInFlight ?? 0,
      held: view?.held ?? 0,
      text_usage: await usage.totals(key.id),
    };
  });

  router.get('/v1/billing/ledger', async (ctx) => {
    const key = callerKey(ctx.state);
    const { limit, offset, ...filter } = parseOrThrow(ledgerQuery, ctx.query);
    await usage.flush(key.id);
    const data = await billing.ledger(key.id, limit, offset, filter);
    ctx.body = { object: 'list', data, has_more: data.length === limit };
  });

  router.get('/v1/billing/spend', async (ctx) => {
    const key = callerKey(ctx.state);
    const { granularity, since, until } = parseOrThrow(spendQuery(Math.floor(Date.now() / 1000)), ctx.query);
    await usage.flush(key.id);
    ctx.body = { object: 'billing.spend', granularity, since, until, data: await spendByBucket(db, key.id, granularity, since, until) };
  });

  router.get('/v1/billing/usage', async (ctx) => {
    const key = callerKey(ctx.state);
    const { limit } = parseOrThrow(usageQuery, ctx.query);
    ctx.body = { object: 'usage', totals: await usage.totals(key.id), recent: await usage.recent(key.id, limit) };
  });

  return router;
}
