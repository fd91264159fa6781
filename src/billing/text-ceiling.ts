/**
 * The most a text request can cost, held against the key before it goes upstream
 * (billing/text-holds.ts), and the estimate of what a dropped answer produced. Pure functions of
 * the request and the price table.
 *
 * Input ceiling, in tokens: the request body's size in bytes (a token of a byte-level tokenizer
 * is at least one byte, and JSON's quotes, keys and escapes only add bytes, more than the few
 * tokens of framing per message), plus FRAMING_TOKENS for what the provider and the gateway add
 * around it (a JSON-mode instruction), TOOLS_TOKENS when tools are given (the provider's tool-use
 * system prompt), IMAGE_TOKENS per image and
 * PDF_PAGE_TOKENS per PDF page (providers bill media by pixels and pages, not bytes; pages are
 * counted in the PDF, PDF_URL_PAGES for a PDF given by URL). Output ceiling: max_tokens (on chat
 * completions max_completion_tokens or max_tokens, the larger, else the gateway's default cap,
 * which is then sent upstream) times n. The input ceiling is priced at the dearest of the model's
 * input, cache-write and cache-read prices, the output ceiling at its output price.
 */
import { findTextPrice, textTokensPrice, type PriceTable } from './prices';
import type { TextUsage } from '../providers/usage';

export const TEXT_CEILING = {
  FRAMING_TOKENS: 50,
  TOOLS_TOKENS: 600,
  IMAGE_TOKENS: 2_000,
  PDF_PAGE_TOKENS: 5_000,
  /** A PDF given by URL cannot be counted before the provider fetches it: the providers' page limit. */
  PDF_URL_PAGES: 100,
  /** Relayed output, when a dropped answer carries no usage: one token per this many UTF-8 bytes. */
  OUTPUT_BYTES_PER_TOKEN: 3,
  /** Input of a dropped chat answer (its usage comes only at the end): one token per this many request bytes. */
  INPUT_BYTES_PER_TOKEN: 4,
} as const;

export interface TextRequestShape {
  endpoint: 'messages' | 'chat' | 'responses';
  body: Record<string, unknown>;
  /** The size of the request body as received. */
  bodyBytes: number;
  /**
   * Input the provider adds from what it keeps (a Responses API request continuing an earlier
   * response: that one's input and output become this one's input).
   */
  contextTokens?: number;
}

export interface TextCeiling {
  inputTokens: number;
  outputTokens: number;
  credits: number;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const positiveInt = (v: unknown): number | undefined => (typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : undefined);

/** Pages of a PDF: its page objects, or the largest /Count of its page tree, at least 1. */
export function pdfPages(base64: string): number {
  const text = Buffer.from(base64, 'base64').toString('latin1');
  let pages = 0;
  for (const _ of text.matchAll(/\/Type\s*\/Page(?![a-zA-Z])/g)) pages++;
  for (const m of text.matchAll(/\/Count\s+(\d{1,6})/g)) pages = Math.max(pages, Number(m[1]));
  return Math.max(1, pages);
}

/** Image and PDF-page tokens of one content block (or chat content part), its nested blocks included. */
function mediaTokens(block: unknown): number {
  if (!isObject(block)) return 0;
  switch (block.type) {
    case 'image':
    case 'image_url':
    case 'input_image':
      return TEXT_CEILING.IMAGE_TOKENS;
    case 'document': {
      const source = isObject(block.source) ? block.source : {};
      const pages = source.type === 'base64' && typeof source.data === 'string' ? pdfPages(source.data) : TEXT_CEILING.PDF_URL_PAGES;
      return pages * TEXT_CEILING.PDF_PAGE_TOKENS;
    }
    case 'file': {
      // Chat completions' file part: { file: { file_data: 'data:application/pdf;base64,...' } } or a file id.
      const file = isObject(block.file) ? block.file : {};
      const data = typeof file.file_data === 'string' ? file.file_data.replace(/^data:[^,]*,/, '') : null;
      return (data ? pdfPages(data) : TEXT_CEILING.PDF_URL_PAGES) * TEXT_CEILING.PDF_PAGE_TOKENS;
    }
    case 'input_file': {
      // The Responses API's file part: file_data is a data URL, or a file id / URL to be fetched.
      const data = typeof block.file_data === 'string' ? block.file_data.replace(/^data:[^,]*,/, '') : null;
      return (data ? pdfPages(data) : TEXT_CEILING.PDF_URL_PAGES) * TEXT_CEILING.PDF_PAGE_TOKENS;
    }
    case 'tool_result':
      return Array.isArray(block.content) ? block.content.reduce<number>((n, b) => n + mediaTokens(b), 0) : 0;
    default:
      return 0;
  }
}

export function inputTokenCeiling(shape: TextRequestShape): number {
  const media = requestMediaTokens(shape.body);
  const tools = Array.isArray(shape.body.tools) && shape.body.tools.length > 0 ? TEXT_CEILING.TOOLS_TOKENS : 0;
  return shape.bodyBytes + TEXT_CEILING.FRAMING_TOKENS + tools + media + (shape.contextTokens ?? 0);
}

/** Image and PDF-page tokens of the request's messages (the Responses API's input items). */
function requestMediaTokens(body: Json): number {
  let media = 0;
  const messages = Array.isArray(body.messages) ? body.messages : Array.isArray(body.input) ? body.input : [];
  for (const m of messages) {
    if (isObject(m) && Array.isArray(m.content)) for (const block of m.content) media += mediaTokens(block);
  }
  return media;
}

/** The output tokens the request may produce; `defaultCap` when a chat request names no limit. */
export function outputTokenCeiling(shape: TextRequestShape, defaultCap: number): number {
  const n = positiveInt(shape.body.n) ?? 1;
  if (shape.endpoint === 'messages') return (positiveInt(shape.body.max_tokens) ?? defaultCap) * n;
  if (shape.endpoint === 'responses') return positiveInt(shape.body.max_output_tokens) ?? defaultCap;
  const named = [positiveInt(shape.body.max_completion_tokens), positiveInt(shape.body.max_tokens)].filter((v): v is number => v !== undefined);
  return (named.length > 0 ? Math.max(...named) : defaultCap) * n;
}

/** Whether a chat request names no output limit (the gateway then sends `defaultCap` upstream). */
export function needsOutputCap(body: Json): boolean {
  return positiveInt(body.max_completion_tokens) === undefined && positiveInt(body.max_tokens) === undefined;
}

/** The same for a Responses API request, whose limit is max_output_tokens (reasoning tokens included). */
export function needsResponsesOutputCap(body: Json): boolean {
  return positiveInt(body.max_output_tokens) === undefined;
}

export function textCeiling(prices: PriceTable, model: string, shape: TextRequestShape, defaultCap: number): TextCeiling {
  const inputTokens = inputTokenCeiling(shape);
  const outputTokens = outputTokenCeiling(shape, defaultCap);
  const p = findTextPrice(prices, model);
  // All input at the dearest input rate: whatever mix of plain, cache-write and cache-read
  // tokens the provider reports, it cannot cost more.
  const dearest = [p.inputPerMTok, p.cacheWritePerMTok, p.cacheReadPerMTok].reduce((a, b) => Math.max(a, b));
  const credits = textTokensPrice({ inputPerMTok: dearest, outputPerMTok: p.outputPerMTok, cacheWritePerMTok: dearest, cacheReadPerMTok: dearest }, model, {
    inputTokens,
    outputTokens,
    cacheCreationTokens: 0,
    cacheReadTokens: 0,
  });
  return { inputTokens, outputTokens, credits };
}

/**
 * What an answer that ended without (complete) usage produced, for billing: the provider's
 * counts where it sent them, else estimates: input at one token per INPUT_BYTES_PER_TOKEN bytes of
 * the request (plus media), output at one token per OUTPUT_BYTES_PER_TOKEN bytes of the text
 * relayed to the client, and never less than one output token.
 */
export function estimateUsage(reported: TextUsage, relayedOutputBytes: number, shape: TextRequestShape): TextUsage {
  const reportedInput = reported.inputTokens + reported.cacheCreationTokens + reported.cacheReadTokens;
  const estimatedInput = Math.ceil(shape.bodyBytes / TEXT_CEILING.INPUT_BYTES_PER_TOKEN) + requestMediaTokens(shape.body) + (shape.contextTokens ?? 0);
  return {
    ...reported,
    inputTokens: reportedInput > 0 ? reported.inputTokens : estimatedInput,
    outputTokens: Math.max(reported.outputTokens, Math.ceil(relayedOutputBytes / TEXT_CEILING.OUTPUT_BYTES_PER_TOKEN), 1),
  };
}
