import { webhookDeliveriesQuery, webhookEndpointBody } from '../../schemas/webhooks';
import { queryParameters, requestSchema } from '../json-schema';
import { ADMIN, KEY_BEARER } from '../security';
import { ADMIN_ERRORS, errors, JSON_BODY_400, json, KEY_ERRORS, keyedJson, pathId } from '../responses';
import type { Operation, RouteDoc } from '../types';

/** Completion webhooks (routes/webhooks.ts): a key's endpoint and secret (admin), and the delivery lists. */

const keyId = pathId('The key id.');
const NO_KEY = "No key with that id ('id').";
const SEE = 'README "Completion webhooks": the event, its headers and signature, retries and rotation.';

function admin(operation: Omit<Operation, 'tags' | 'security'>): Operation {
  return { ...operation, tags: ['Admin'], security: ADMIN, responses: { ...operation.responses, ...errors(ADMIN_ERRORS) } };
}

export function webhookRoutes(): RouteDoc[] {
  const path = '/admin/keys/{id}/webhook';
  return [
    {
      method: 'get',
      path,
      operation: admin({
        operationId: 'adminGetKeyWebhook',
        summary: "A key's completion-webhook endpoint and the hint of its signing secret",
        description: SEE,
        parameters: [keyId],
        responses: { '200': json('The settings (url and secret_hint null when none are set).', 'WebhookEndpoint'), ...errors({ 404: NO_KEY }) },
      }),
    },
    {
      method: 'put',
      path,
      operation: admin({
        operationId: 'adminSetKeyWebhook',
        summary: "Set a key's completion-webhook endpoint (the first call makes its signing secret, shown once)",
        description: `The url must be https:// on a public host (WEBHOOK_ALLOW_HTTP, WEBHOOK_ALLOW_PRIVATE relax it); null keeps only requests' callback_url. ${SEE}`,
        parameters: [keyId],
        requestBody: { required: true, description: 'At most 16 KiB.', content: { 'application/json': { schema: requestSchema(webhookEndpointBody) } } },
        responses: {
          '200': json('The settings, with `secret` when this call made it.', 'WebhookEndpointWithSecret'),
          ...errors({ 400: `${JSON_BODY_400}, or the url is not allowed (\`invalid_webhook_url\`).`, 404: NO_KEY, 413: 'The body is over 16 KiB.' }),
        },
      }),
    },
    {
      method: 'delete',
      path,
      operation: admin({
        operationId: 'adminClearKeyWebhook',
        summary: "Clear a key's completion-webhook endpoint (its secret stays, for requests' callback_url)",
        parameters: [keyId],
        responses: { '200': json('The settings.', 'WebhookEndpoint'), ...errors({ 404: NO_KEY }) },
      }),
    },
    {
      method: 'post',
      path: `${path}/rotate`,
      operation: admin({
        operationId: 'adminRotateKeyWebhookSecret',
        summary: "Rotate a key's webhook signing secret: the new one is shown once; the previous one also signs for 24 hours",
        description: SEE,
        parameters: [keyId],
        responses: { '200': json('The settings, with the new `secret`.', 'WebhookEndpointWithSecret'), ...errors({ 404: NO_KEY }) },
      }),
    },
    {
      method: 'get',
      path: `${path}/deliveries`,
      operation: admin({
        operationId: 'adminListKeyWebhookDeliveries',
        summary: "A key's completion-webhook events, newest first, each with every delivery attempt",
        parameters: [keyId, ...queryParameters(webhookDeliveriesQuery)],
        responses: { '200': json('The events.', 'WebhookDeliveryList'), ...errors({ 400: 'A bad or unknown query parameter.', 404: NO_KEY }) },
      }),
    },
    {
      method: 'get',
      path: '/v1/webhooks/deliveries',
      operation: {
        operationId: 'listWebhookDeliveries',
        summary: "The key's own completion-webhook events, newest first, each with every delivery attempt",
        description: SEE,
        tags: ['Webhooks'],
        security: KEY_BEARER,
        parameters: queryParameters(webhookDeliveriesQuery),
        responses: { '200': keyedJson('The events.', 'WebhookDeliveryList'), ...errors({ ...KEY_ERRORS, 400: 'A bad or unknown query parameter.' }) },
      },
    },
  ];
}
