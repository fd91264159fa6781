/**
 * The OpenAI Responses API's wire shapes (upstreams.md 5), as the gateway reads them from an
 * upstream: the Response object, its output items and usage, the deletion answer and the stream
 * events. Objects are `loose`: a provider's extra fields are kept and passed on to the client.
 */
import { z } from 'zod';

export const RESPONSE_STATUSES = ['queued', 'in_progress', 'completed', 'failed', 'cancelled', 'incomplete'] as const;
export const responseStatus = z.enum(RESPONSE_STATUSES);
export type ResponseStatus = z.infer<typeof responseStatus>;

/** A response in one of these states changes no more. */
export function isTerminalStatus(status: ResponseStatus): boolean {
  return status !== 'queued' && status !== 'in_progress';
}

export const responseUsage = z
  .object({
    input_tokens: z.number().int().nonnegative(),
    input_tokens_details: z.object({ cached_tokens: z.number().int().nonnegative().nullish() }).loose().nullish(),
    output_tokens: z.number().int().nonnegative(),
    output_tokens_details: z.object({ reasoning_tokens: z.number().int().nonnegative().nullish() }).loose().nullish(),
    total_tokens: z.number().int().nonnegative().nullish(),
  })
  .loose();
export type ResponseUsage = z.infer<typeof responseUsage>;

export const outputText = z.object({ type: z.literal('output_text'), text: z.string(), annotations: z.array(z.unknown()).optional() }).loose();

export const reasoningItem = z
  .object({ type: z.literal('reasoning'), id: z.string(), summary: z.array(z.object({ type: z.string(), text: z.string() }).loose()) })
  .loose();
export const messageItem = z
  .object({
    type: z.literal('message'),
    id: z.string(),
    role: z.literal('assistant'),
    status: z.string().optional(),
    content: z.array(z.union([outputText, z.object({ type: z.string() }).loose()])),
  })
  .loose();
export const functionCallItem = z
  .object({ type: z.literal('function_call'), id: z.string().optional(), call_id: z.string(), name: z.string(), arguments: z.string() })
  .loose();
/** Hosted tools' items (web_search_call, ...) pass through unread. */
const otherItem = z.object({ type: z.string() }).loose();
export const outputItem = z.union([reasoningItem, messageItem, functionCallItem, otherItem]);
export type OutputItem = z.infer<typeof outputItem>;

export const responseError = z.object({ code: z.string().nullish(), message: z.string() }).loose();

export const responseObject = z
  .object({
    id: z.string().min(1),
    object: z.literal('response'),
    created_at: z.number(),
    status: responseStatus,
    model: z.string(),
    output: z.array(outputItem),
    usage: responseUsage.nullish(),
    error: responseError.nullish(),
    incomplete_details: z.object({ reason: z.string().nullish() }).loose().nullish(),
    background: z.boolean().nullish(),
    previous_response_id: z.string().nullish(),
  })
  .loose();
export type ResponseObject = z.infer<typeof responseObject>;

export const deletedResponse = z.object({ id: z.string(), object: z.literal('response'), deleted: z.literal(true) }).loose();

/** The stream events that carry the whole Response object (its id, status and, at the end, usage). */
export const RESPONSE_EVENTS = [
  'response.created',
  'response.queued',
  'response.in_progress',
  'response.completed',
  'response.failed',
  'response.incomplete',
] as const;
/** The events after which nothing more comes. */
export const FINAL_EVENTS: readonly string[] = ['response.completed', 'response.failed', 'response.incomplete', 'error'];

export const responseEvent = z.object({ type: z.enum(RESPONSE_EVENTS), sequence_number: z.number().int(), response: responseObject }).loose();
export const errorEvent = z
  .object({
    type: z.literal('error'),
    code: z.string().nullish(),
    message: z.string(),
    param: z.string().nullish(),
    sequence_number: z.number().int().optional(),
  })
  .loose();
/** Any event: its type and place in the stream; the other fields depend on the type. */
export const streamEvent = z.object({ type: z.string(), sequence_number: z.number().int() }).loose();
export type StreamEvent = z.infer<typeof streamEvent>;
