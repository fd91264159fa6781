import { adminTasksQuery, createKeyBody, keyListQuery, quotaBody, updateKeyBody, usageQuery } from '../../schemas/admin-keys';
import { ledgerQuery } from '../../schemas/ledger-query';
import { queryParameters, requestSchema } from '../json-schema';
import { ADMIN } from '../security';
import { ADMIN_ERRORS, errors, JSON_BODY_400, json, pathId } from '../responses';
import type { Operation, RequestBody, RouteDoc } from '../types';
import type { z } from 'zod';

/** The admin API (routes/admin.ts), behind ADMIN_TOKEN. */

function body(schema: z.ZodType, description: string): RequestBody {
  return { required: true, description: `${description} At most 64 KiB.`, content: { 'application/json': { schema: requestSchema(schema) } } };
}

const keyId = pathId('The key id.');
const BAD_BODY = `${JSON_BODY_400}, or a parameter is invalid or unknown (\`param\` names it).`;
const NO_KEY = "No key with that id ('id').";

function admin(operation: Omit<Operation, 'tags' | 'security'>): Operation {
  return { ...operation, tags: ['Admin'], security: ADMIN, responses: { ...operation.responses, ...errors(ADMIN_ERRORS) } };
}

export function adminRoutes(): RouteDoc[] {
  return [
    {
      method: 'post',
      path: '/admin/keys',
      operation: admin({
        operationId: 'adminCreateKey',
        summary: 'Issue a key (its secret is shown only in this answer)',
        requestBody: body(createKeyBody, '`quota`: the opening balance in credits, absent = unlimited. A limit absent or null: none.'),
        responses: { '201': json('The key, with its secret.', 'KeyIssued'), ...errors({ 400: BAD_BODY, 413: 'The body is over 64 KiB.' }) },
      }),
    },
    {
      method: 'get',
      path: '/admin/keys',
      operation: admin({
        operationId: 'adminListKeys',
        summary: 'The live keys (with include_revoked=true, the revoked ones too), without secrets, with balance and spending',
        parameters: queryParameters(keyListQuery),
        responses: { '200': json('The keys.', 'ApiKeyList'), ...errors({ 400: 'A bad or unknown query parameter.' }) },
      }),
    },
    {
      method: 'get',
      path: '/admin/keys/{id}',
      operation: admin({
        operationId: 'adminGetKey',
        summary: 'A key with its balance, spending and work in flight',
        parameters: [keyId],
        responses: { '200': json('The key.', 'ApiKey'), ...errors({ 404: NO_KEY }) },
      }),
    },
    {
      method: 'patch',
      path: '/admin/keys/{id}',
      operation: admin({
        operationId: 'adminUpdateKey',
        summary: "Change a key's limits (null removes one)",
        parameters: [keyId],
        requestBody: body(updateKeyBody, "Every API process picks the change up on the key's next request."),
        responses: { '200': json('The key.', 'ApiKey'), ...errors({ 400: BAD_BODY, 404: 'No live key with that id.', 413: 'The body is over 64 KiB.' }) },
      }),
    },
    {
      method: 'post',
      path: '/admin/keys/{id}/quota',
      operation: admin({
        operationId: 'adminChangeQuota',
        summary: 'Add (delta > 0) or remove (delta < 0) credits',
        description: 'An Idempotency-Key header makes a retried call a no-op (at most 200 characters).',
        parameters: [
          keyId,
          { name: 'Idempotency-Key', in: 'header', required: false, description: 'Makes a retried grant a no-op.', schema: { type: 'string', maxLength: 200 } },
        ],
        requestBody: body(quotaBody, '`delta` must not be 0.'),
        responses: {
          '200': json('The new balance.', 'QuotaChanged'),
          ...errors({
            400: `${BAD_BODY} Also an Idempotency-Key over 200 characters.`,
            404: NO_KEY,
            409: 'The key is unlimited (`key_unlimited`), or the removal would take the balance below what it holds (`insufficient_balance`).',
            413: 'The body is over 64 KiB.',
          }),
        },
      }),
    },
    {
      method: 'get',
      path: '/admin/keys/{id}/ledger',
      operation: admin({
        operationId: 'adminKeyLedger',
        summary: "A key's ledger, newest first",
        parameters: [keyId, ...queryParameters(ledgerQuery)],
        responses: { '200': json('One page of entries.', 'KeyLedgerPage'), ...errors({ 400: 'A bad or unknown query parameter.', 404: NO_KEY }) },
      }),
    },
    {
      method: 'get',
      path: '/admin/audit',
      operation: admin({
        operationId: 'adminAudit',
        summary: 'The ledger audit of `npm run audit:ledger`, on a running gateway',
        responses: { '200': json('The audit; `mismatches` is empty when every balance equals its ledger.', 'LedgerAudit') },
      }),
    },
    {
      method: 'delete',
      path: '/admin/keys/{id}',
      operation: admin({
        operationId: 'adminRevokeKey',
        summary: 'Revoke a key (401 at once in every API process)',
        parameters: [keyId],
        responses: { '200': json('Revoked.', 'KeyDeleted'), ...errors({ 404: 'No live key with that id.' }) },
      }),
    },
    {
      method: 'get',
      path: '/admin/keys/{id}/usage',
      operation: admin({
        operationId: 'adminKeyUsage',
        summary: "A key's text usage: totals per model and the recent records",
        parameters: [keyId, ...queryParameters(usageQuery)],
        responses: { '200': json('The usage.', 'KeyUsage'), ...errors({ 400: 'A bad or unknown query parameter.', 404: NO_KEY }) },
      }),
    },
    {
      method: 'get',
      path: '/admin/channels',
      operation: admin({
        operationId: 'adminListChannels',
        summary: 'The text channels (no secrets) with their health, and the video channels',
        responses: { '200': json('The channels.', 'ChannelList') },
      }),
    },
    {
      method: 'get',
      path: '/admin/tasks',
      operation: admin({
        operationId: 'adminListTasks',
        summary: 'Video tasks across keys, newest first, with owner, cost and Temporal UI link',
        description:
          '`key_id`, `model` and `status` narrow the list; a page may hold fewer than `limit` tasks when `has_more` is true (continue with `after` = `last_id`).',
        parameters: queryParameters(adminTasksQuery),
        responses: {
          '200': json('One page of tasks.', 'AdminTaskList'),
          ...errors({ 400: 'A bad or unknown query parameter, or an `after` that names no video task (`invalid_cursor`).', 503: 'Temporal is unreachable.' }),
        },
      }),
    },
  ];
}
