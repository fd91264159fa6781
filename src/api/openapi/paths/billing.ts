import { ledgerQuery } from '../../schemas/ledger-query';
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
        tags: ['Billing'],
        security: KEY_BEARER,
        parameters: queryParameters(ledgerQuery),
        responses: { '200': keyedJson('One page of entries.', 'LedgerPage'), ...errors({ ...KEY_ERRORS, 400: 'A bad or unknown query parameter.' }) },
      },
    },
  ];
}
