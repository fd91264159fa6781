import { ledgerQuery } from '../../schemas/ledger-query';
import { spendQueryFields } from '../../schemas/spend-query';
import { usageQuery } from '../../schemas/admin-keys';
import { queryParameters } from '../json-schema';
import { KEY_BEARER } from '../security';
import { errors, KEY_ERRORS, keyedJson } from '../responses';
import type { RouteDoc } from '../types';

/** What a key sees of its own money (routes/billing.ts). */
export function billingRoutes(): RouteDoc[] {
  return [
    {
      method: 'get',
      path: '/v1/billing',
      operation: {
        operationId: 'getBilling',
        summary: "The key's balance, limits, spending, work in flight and text usage by model",
        tags: ['Billing'],
        security: KEY_BEARER,
        responses: { '200': keyedJson("The key's billing.", 'Billing'), ...errors(KEY_ERRORS) },
      },
    },
    {
      method: 'get',
      path: '/v1/billing/ledger',
      operation: {
        operationId: 'listBillingLedger',
        summary: "The key's ledger entries, newest first",
        description: '`kind`, `model`, `since` and `until` (unix seconds, until exclusive) narrow the entries.',
        tags: ['Billing'],
        security: KEY_BEARER,
        parameters: queryParameters(ledgerQuery),
        responses: { '200': keyedJson('One page of entries.', 'LedgerPage'), ...errors({ ...KEY_ERRORS, 400: 'A bad or unknown query parameter.' }) },
      },
    },
    {
      method: 'get',
      path: '/v1/billing/spend',
      operation: {
        operationId: 'getBillingSpend',
        summary: "The key's spending by model and UTC day or hour",
        description:
          'Charges + text usage - refunds, summed per (bucket, model) over [since, until). Defaults: until = the end of the current UTC bucket; since = 30 days (day) or 48 hours (hour) before it. At most 400 buckets.',
        tags: ['Billing'],
        security: KEY_BEARER,
        parameters: queryParameters(spendQueryFields),
        responses: {
          '200': keyedJson('The buckets that hold spending, oldest first.', 'BillingSpend'),
          ...errors({ ...KEY_ERRORS, 400: 'A bad or unknown query parameter, since not before until, or more than 400 buckets.' }),
        },
      },
    },
    {
      method: 'get',
      path: '/v1/billing/usage',
      operation: {
        operationId: 'getBillingUsage',
        summary: "The key's text usage: totals by model and the latest records",
        tags: ['Billing'],
        security: KEY_BEARER,
        parameters: queryParameters(usageQuery),
        responses: { '200': keyedJson('The usage.', 'BillingUsage'), ...errors({ ...KEY_ERRORS, 400: 'A bad or unknown query parameter.' }) },
      },
    },
  ];
}
