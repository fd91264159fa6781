import type { z } from 'zod';
import { responseSchema } from './json-schema';
import type { JsonSchema } from './types';
import { anthropicError, openAiError } from './response-schemas/errors';
import { healthReport, liveness, readiness } from './response-schemas/health';
import { videoTask, videoTaskCreated } from './response-schemas/video-tasks';
import { videoContent, videoDeleted, videoList, videoObjectCreated, videoObjectStatus, videoRemix } from './response-schemas/video-objects';
import { character } from './response-schemas/characters';
import {
  anthropicMessage,
  chatCompletionChunk,
  chatCompletionObject,
  responseDeleted,
  responseObject,
  responseStreamEvent,
  tokenCount,
} from './response-schemas/text';
import { model, modelList } from './response-schemas/models';
import { billing, ledgerPage } from './response-schemas/billing';
import { adminTaskList, billingSpend, billingUsage, characterList, consoleSession, consoleSessionDeleted, videoTimeline } from './response-schemas/console';
import { webhookDeliveryList, webhookEndpoint, webhookEndpointWithSecret } from './response-schemas/webhooks';
import { apiKeyDetail, apiKeyList, channelList, keyDeleted, keyIssued, keyLedgerPage, keyUsage, ledgerAudit, quotaChanged } from './response-schemas/admin';

/** The named answers of components.schemas, referenced from the operations by name. */
const SCHEMAS = {
  Error: openAiError,
  AnthropicError: anthropicError,
  Liveness: liveness,
  Readiness: readiness,
  HealthReport: healthReport,
  VideoTaskCreated: videoTaskCreated,
  VideoTask: videoTask,
  VideoCreated: videoObjectCreated,
  Video: videoObjectStatus,
  VideoRemix: videoRemix,
  VideoDeleted: videoDeleted,
  VideoContent: videoContent,
  VideoList: videoList,
  Character: character,
  ChatCompletion: chatCompletionObject,
  ChatCompletionChunk: chatCompletionChunk,
  Response: responseObject,
  ResponseStreamEvent: responseStreamEvent,
  ResponseDeleted: responseDeleted,
  Message: anthropicMessage,
  TokenCount: tokenCount,
  Model: model,
  ModelList: modelList,
  Billing: billing,
  LedgerPage: ledgerPage,
  KeyIssued: keyIssued,
  ApiKeyList: apiKeyList,
  ApiKey: apiKeyDetail,
  QuotaChanged: quotaChanged,
  KeyDeleted: keyDeleted,
  KeyLedgerPage: keyLedgerPage,
  LedgerAudit: ledgerAudit,
  KeyUsage: keyUsage,
  ChannelList: channelList,
  ConsoleSession: consoleSession,
  ConsoleSessionDeleted: consoleSessionDeleted,
  BillingSpend: billingSpend,
  BillingUsage: billingUsage,
  VideoTimeline: videoTimeline,
  CharacterList: characterList,
  AdminTaskList: adminTaskList,
  WebhookEndpoint: webhookEndpoint,
  WebhookEndpointWithSecret: webhookEndpointWithSecret,
  WebhookDeliveryList: webhookDeliveryList,
} satisfies Record<string, z.ZodType>;

export type SchemaName = keyof typeof SCHEMAS;

export function ref(name: SchemaName): JsonSchema {
  return { $ref: `#/components/schemas/${name}` };
}

export function componentSchemas(): Record<string, JsonSchema> {
  return Object.fromEntries(Object.entries(SCHEMAS).map(([name, schema]) => [name, responseSchema(schema)]));
}
