import { ref, type SchemaName } from './components';
import type { Header, JsonSchema, Parameter, Response } from './types';

/** Helpers the operations share: answers, error answers, the headers and parameters that recur. */

const text: JsonSchema = { type: 'string' };

export const HEADERS = {
  requestId: { description: "The request id (the caller's x-request-id when it is sane, else a new one); also in logs.", schema: text },
  retryAfter: { description: 'Seconds to wait before retrying.', schema: { type: 'string', pattern: '^\\d+$' } },
  rateLimit: {
    'x-ratelimit-limit-requests': { description: "The key's rate_limit_rpm (only for a key that has one).", schema: text },
    'x-ratelimit-remaining-requests': { description: 'Requests left in the bucket.', schema: text },
    'x-ratelimit-reset-requests': { description: 'Time until the bucket is full, e.g. `3s`.', schema: text },
  },
  gatewayOverhead: {
    description:
      'Text answers made by a provider: milliseconds the gateway itself spent before the answer began (to its headers), the waits on providers left out; two decimals.',
    schema: { type: 'string', pattern: '^\\d+\\.\\d{2}$' },
  },
  idempotentReplayed: {
    description: '`true` when the answer is that of an earlier request with the same Idempotency-Key.',
    schema: { type: 'string', const: 'true' },
  },
} satisfies Record<string, Header | Record<string, Header>>;

export const IDEMPOTENCY_KEY: Parameter = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes a retried create answer the same task, charged once, for 24 hours (1-255 visible ASCII characters). The same key with another request is a 422; a repeat while the first still runs waits up to 10 s, then 409.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
};

export function pathId(description: string): Parameter {
  return { name: 'id', in: 'path', required: true, description, schema: text };
}

/** A JSON answer with a named schema, and x-request-id (every answer carries it). */
export function json(description: string, schema: SchemaName, headers: Record<string, Header> = {}): Response {
  return { description, headers: { 'x-request-id': HEADERS.requestId, ...headers }, content: { 'application/json': { schema: ref(schema) } } };
}

/** A JSON answer from a key-authenticated route: its rate limit headers too. */
export function keyedJson(description: string, schema: SchemaName, headers: Record<string, Header> = {}): Response {
  return json(description, schema, { ...HEADERS.rateLimit, ...headers });
}

/** The error statuses the gateway answers, with what each means wherever it occurs. */
export type ErrorStatus = 400 | 401 | 402 | 403 | 404 | 409 | 413 | 416 | 422 | 429 | 500 | 502 | 503 | 504 | 529;

/** Statuses whose answers carry Retry-After. */
const RETRY_AFTER: ReadonlySet<ErrorStatus> = new Set([429, 503]);

/**
 * Error answers, each with the reasons this route gives: the OpenAI shape (`Error`) everywhere
 * but /v1/messages, which answers in Anthropic's (`AnthropicError`).
 */
export function errors(reasons: Partial<Record<ErrorStatus, string>>, shape: 'Error' | 'AnthropicError' = 'Error'): Record<string, Response> {
  return Object.fromEntries(
    Object.entries(reasons).map(([status, description]) => {
      const headers: Record<string, Header> = { 'x-request-id': HEADERS.requestId };
      if (RETRY_AFTER.has(Number(status) as ErrorStatus)) headers['retry-after'] = HEADERS.retryAfter;
      return [status, { description, headers, content: { 'application/json': { schema: ref(shape) } } }];
    }),
  );
}

/** What any key-authenticated route may answer before it runs. */
export const KEY_ERRORS = {
  401: 'No key, or an unknown, revoked or foreign key (`invalid_api_key`).',
  429: "Over the key's rate_limit_rpm (`rate_limit_exceeded`), or too many failed authentications from this address.",
} satisfies Partial<Record<ErrorStatus, string>>;

export const ADMIN_ERRORS = {
  401: 'Missing or wrong admin token (`invalid_admin_token`).',
  429: 'Too many failed authentications from this address (`rate_limit_exceeded`): the right token is refused there too until the budget has a token again.',
} satisfies Partial<Record<ErrorStatus, string>>;

/** A JSON body's own failures (middleware/json-body.ts), before its schema is checked. */
export const JSON_BODY_400 =
  'Content-Type is not application/json (`unsupported_content_type`), the body is compressed (`unsupported_content_encoding`), the body is not UTF-8 JSON (`invalid_json`) or nests deeper than 64 levels (`json_too_deep`)';

/** A file's bytes: the schema of a binary body in OpenAPI 3.1. */
export function binary(mediaType: string): JsonSchema {
  return { type: 'string', contentMediaType: mediaType };
}
