/**
 * The price table of unified billing, and what one video task, one text answer and one
 * character cost. Credits are integers: 1 credit = 1 micro-USD (1,000,000 credits = $1).
 * Every charge is computed with BigInt and rounded up once at the end, so a price never
 * drifts by a float error however large the count. Pure data and functions, safe to import
 * from workflow code; PRICES_FILE overrides are merged in by src/billing/price-config.ts.
 */
import type { TextUsage } from '../providers/usage';

export interface VideoPrice {
  /** Credits per second of video. */
  perSecond: number;
  /** Seconds billed when the request names none: the length the upstream makes by default. */
  defaultSeconds: number;
  /** Multiplier in percent per size value, e.g. {'1080x1080': 150}; sizes not listed are 100%. */
  sizePercent?: Record<string, number>;
  /** Percent surcharge when enable_upsample is set (e.g. 50 = half as much again). */
  upsamplePercent?: number;
}

/** Credits per million tokens. */
export interface TextPrice {
  inputPerMTok: number;
  outputPerMTok: number;
  cacheWritePerMTok: number;
  cacheReadPerMTok: number;
}

export interface PriceTable {
  video: Record<string, VideoPrice>;
  text: Record<string, TextPrice>;
  /** For text models not listed (any OpenAI-compatible model a channel serves). */
  textDefault: TextPrice;
  /** One character creation. */
  character: number;
}

export class PriceError extends Error {}

/** Credits per US dollar. */
export const CREDITS_PER_USD = 1_000_000;

/**
 * Anthropic's pricing shape: a 5-minute cache write costs 1.25x the input price, a cache
 * read 0.1x. Written out as integers (credits per MTok = micro-USD per MTok) so no price
 * is ever the result of float arithmetic.
 */
const anthropic = (input: number, output: number, cacheWrite: number, cacheRead: number): TextPrice => ({
  inputPerMTok: input,
  outputPerMTok: output,
  cacheWritePerMTok: cacheWrite,
  cacheReadPerMTok: cacheRead,
});

/** OpenAI's pricing shape: caching is automatic, so a cache write costs the input price; reads are discounted. */
const openai = (input: number, output: number, cachedInput: number): TextPrice => ({
  inputPerMTok: input,
  outputPerMTok: output,
  cacheWritePerMTok: input,
  cacheReadPerMTok: cachedInput,
});

/**
 * vidgen models are billed for 8 seconds by default: /v1/video/create sends no duration, and
 * 8 s is what Veo makes when none is asked for (Veo 2 included, whose range is 5-8 s), so the
 * vidgen2 family uses 8 too. vidgen_3_1* on /v1/videos bill the seconds the request names.
 * No upsample surcharge: Veo 3 charges 1080p like 720p, and Veo 2 ignores the flag.
 */
const vidgen = (perSecond: number): VideoPrice => ({ perSecond, defaultSeconds: 8 });

/**
 * motion models default to their first `durations` value (10 s, see catalog/models.ts);
 * the square 1080x1080 size is the high-resolution render, billed half as much again.
 */
const motion = (perSecond: number): VideoPrice => ({ perSecond, defaultSeconds: 10, sizePercent: { '1080x1080': 150 } });

/**
 * Market-like defaults (upstream list prices, late 2025), in credits. Remix is priced like a
 * new task of the same model and seconds: the provider renders a whole new video for it.
 */
export const DEFAULT_PRICES: PriceTable = {
  video: {
    vidgen2: vidgen(350_000), // $0.35/s
    'vidgen2-fast': vidgen(150_000), // $0.15/s
    'vidgen2-pro': vidgen(500_000), // $0.50/s
    'vidgen2-fast-frames': vidgen(150_000),
    'vidgen2-fast-components': vidgen(150_000),
    vidgen3: vidgen(400_000), // $0.40/s: 8 s = 3,200,000 credits = $3.20
    'vidgen3-fast': vidgen(150_000),
    'vidgen3-pro': vidgen(600_000), // $0.60/s
    'vidgen3-pro-frames': vidgen(600_000),
    'vidgen3.1': vidgen(400_000),
    'vidgen3.1-fast': vidgen(150_000),
    vidgen_3_1: vidgen(400_000),
    'vidgen_3_1-fast': vidgen(150_000),
    'motion-2': motion(100_000), // $0.10/s, 10 s = $1.00
    'motion-2-pro': motion(300_000), // $0.30/s
  },
  text: {
    'cm-opus-4-5-20251101': anthropic(5_000_000, 25_000_000, 6_250_000, 500_000), // $5 / $25
    'cm-sonnet-4.5': anthropic(3_000_000, 15_000_000, 3_750_000, 300_000), // $3 / $15
    'cm-haiku-4.5': anthropic(1_000_000, 5_000_000, 1_250_000, 100_000), // $1 / $5
    'gpt-4o-mini': openai(150_000, 600_000, 75_000), // $0.15 / $0.60
    'gpt-4o': openai(2_500_000, 10_000_000, 1_250_000), // $2.50 / $10
    // The 4.1 family discounts cached input to a quarter, not a half.
    'gpt-4.1-mini': openai(400_000, 1_600_000, 100_000), // $0.40 / $1.60
    'gpt-4.1': openai(2_000_000, 8_000_000, 500_000), // $2 / $8
    // The responses-only models (POST /v1/responses); reasoning tokens are billed as output.
    // Those without a cached-input price bill cached input at the full input price.
    'o1-pro': openai(150_000_000, 600_000_000, 150_000_000), // $150 / $600
    'o3-pro': openai(20_000_000, 80_000_000, 20_000_000), // $20 / $80
    'o3-deep-research': openai(10_000_000, 40_000_000, 2_500_000), // $10 / $40
    'o4-mini-deep-research': openai(2_000_000, 8_000_000, 500_000), // $2 / $8
    'gpt-5-pro': openai(15_000_000, 120_000_000, 15_000_000), // $15 / $120
    'gpt-5-codex': openai(1_250_000, 10_000_000, 125_000), // $1.25 / $10
    'codex-mini-latest': openai(1_500_000, 6_000_000, 375_000), // $1.50 / $6
    'computer-use-preview': openai(3_000_000, 12_000_000, 3_000_000), // $3 / $12
  },
  // gpt-4o's: a mid-range price for whatever model an OpenAI-compatible channel serves.
  textDefault: openai(2_500_000, 10_000_000, 1_250_000),
  character: 100_000, // $0.10
};

/** A count or price as a BigInt, refusing what is not a non-negative safe integer (BigInt(1.5) would throw a RangeError). */
function big(value: number, what: string): bigint {
  if (!Number.isSafeInteger(value) || value < 0) throw new PriceError(`${what} must be a non-negative integer, got ${value}`);
  return BigInt(value);
}

/** Integer division rounding up, then back to a number: the one rounding of a charge. */
function ceilCredits(numerator: bigint, denominator: bigint): number {
  const credits = (numerator + denominator - 1n) / denominator;
  if (credits > BigInt(Number.MAX_SAFE_INTEGER)) throw new PriceError(`charge of ${credits} credits is too large`);
  return Number(credits);
}

export function findVideoPrice(table: PriceTable, model: string): VideoPrice | undefined {
  // hasOwn: a model named like an Object.prototype member must not find one.
  return Object.hasOwn(table.video, model) ? table.video[model] : undefined;
}

export function findTextPrice(table: PriceTable, model: string): TextPrice {
  return Object.hasOwn(table.text, model) ? (table.text[model] as TextPrice) : table.textDefault;
}

/**
 * Credits for one video task: perSecond x seconds x size% x (100 + upsample)%. The request's
 * `seconds` is what is billed, the model's defaultSeconds when it names none. `remix` does not
 * change the price (a remix is a new render of the same length), it is accepted so callers
 * pass the whole task.
 */
export function videoTaskPrice(table: PriceTable, task: { model: string; seconds?: number; size?: string; enableUpsample?: boolean; remix?: boolean }): number {
  const price = findVideoPrice(table, task.model);
  if (!price) throw new PriceError(`no price for video model ${task.model}`);
  const seconds = big(task.seconds ?? price.defaultSeconds, `${task.model} seconds`);
  if (seconds === 0n) throw new PriceError(`${task.model} seconds must be at least 1`);
  const sizes = price.sizePercent;
  const sizePercent = task.size !== undefined && sizes && Object.hasOwn(sizes, task.size) ? (sizes[task.size] as number) : 100;
  const upsample = task.enableUpsample ? (price.upsamplePercent ?? 0) : 0;
  const numerator =
    big(price.perSecond, `${task.model} perSecond`) *
    seconds *
    big(sizePercent, `${task.model} sizePercent`) *
    (100n + big(upsample, `${task.model} upsamplePercent`));
  return ceilCredits(numerator, 10_000n);
}

/**
 * Credits for one text answer: each token count at its per-million price, summed exactly and
 * rounded up once, so a single input token of a $1/MTok model costs 1 credit, not 0.
 * Models not in the table are priced at textDefault.
 */
export function textUsagePrice(table: PriceTable, model: string, usage: TextUsage): number {
  return textTokensPrice(findTextPrice(table, model), model, usage);
}

/** textUsagePrice at an explicit price (`model` only names it in errors). */
export function textTokensPrice(p: TextPrice, model: string, usage: TextUsage): number {
  const pairs: readonly (readonly [number, number])[] = [
    [usage.inputTokens, p.inputPerMTok],
    [usage.outputTokens, p.outputPerMTok],
    [usage.cacheCreationTokens, p.cacheWritePerMTok],
    [usage.cacheReadTokens, p.cacheReadPerMTok],
  ];
  // Every text answer is priced, so the usual case stays in doubles, which are exact for
  // integers up to 2^53: each term and the sum are checked to be there, and the rounding is
  // done with an integer remainder, not a float division. Anything else takes BigInt.
  let sum = 0;
  for (const [tokens, perMTok] of pairs) {
    if (!Number.isSafeInteger(tokens) || tokens < 0 || !Number.isSafeInteger(perMTok) || perMTok < 0) return textUsagePriceBig(p, model, usage);
    const term = tokens * perMTok;
    sum += term;
    if (!Number.isSafeInteger(term) || !Number.isSafeInteger(sum)) return textUsagePriceBig(p, model, usage);
  }
  const rest = sum % 1_000_000;
  return (sum - rest) / 1_000_000 + (rest > 0 ? 1 : 0);
}

/** textUsagePrice in BigInt: huge counts, and the errors naming what is wrong. */
function textUsagePriceBig(p: TextPrice, model: string, usage: TextUsage): number {
  const numerator =
    big(usage.inputTokens, 'inputTokens') * big(p.inputPerMTok, `${model} inputPerMTok`) +
    big(usage.outputTokens, 'outputTokens') * big(p.outputPerMTok, `${model} outputPerMTok`) +
    big(usage.cacheCreationTokens, 'cacheCreationTokens') * big(p.cacheWritePerMTok, `${model} cacheWritePerMTok`) +
    big(usage.cacheReadTokens, 'cacheReadTokens') * big(p.cacheReadPerMTok, `${model} cacheReadPerMTok`);
  return ceilCredits(numerator, 1_000_000n);
}

export function characterPrice(table: PriceTable): number {
  return ceilCredits(big(table.character, 'character'), 1n);
}
