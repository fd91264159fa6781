import Router from '@koa/router';
import type { BillingStore } from '../../billing/ledger';
import type { UsageRecorder } from '../../billing/usage';
import { callerKey, type GatewayState } from '../context';
import { parseOrThrow } from '../schemas/zod-error';
import { ledgerQuery } from '../schemas/ledger-query';

export interface BillingRouteDeps {
  billing: BillingStore;
  usage: UsageRecorder;
}

/**
 * What a key can see of its own money: GET /v1/billing (balance, limits, spending, tasks in
 * flight, text usage by model) and GET /v1/billing/ledger (its entries, newest first).
 */
export function billingRoutes({ billing, usage }: BillingRouteDeps): Router<GatewayState> {
  const router = new Router<GatewayState>();

  router.get('/v1/billing', async (ctx) => {
    const key = callerKey(ctx.state);
    await usage.flush();
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
    const { limit, offset } = parseOrThrow(ledgerQuery, ctx.query);
    await usage.flush();
    const data = await billing.ledger(key.id, limit, offset);
    ctx.body = { object: 'list', data, has_more: data.length === limit };
  });

  return router;
}
