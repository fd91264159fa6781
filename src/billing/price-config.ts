import fs from 'node:fs';
import YAML from 'yaml';
import { z } from 'zod';
import { ConfigError } from '../config/env';
import { videoModelIds } from '../catalog/models';
import { DEFAULT_PRICES, type PriceTable, type TextPrice, type VideoPrice } from './prices';

/**
 * The price table: DEFAULT_PRICES, with what PRICES_FILE (YAML or JSON, see
 * prices.example.yaml) overrides merged over it. A file names only what it changes; each
 * model it lists replaces that model's whole entry. A bad file is a ConfigError at start-up,
 * never a wrong charge later.
 */

/** "is missing" / "must be a number" read better than zod's "expected number, received undefined". */
const number = () => z.number({ error: (issue) => (issue.input === undefined ? 'is missing' : 'must be a number') });

/** A non-negative safe integer: beyond 2^53 a number read from the file is already rounded. */
const wholeNumber = (what: string) =>
  number().min(0, 'must not be negative').max(Number.MAX_SAFE_INTEGER, 'is too large').refine(Number.isInteger, `must be a whole number (${what})`);
const credits = wholeNumber('credits are micro-USD');
const percent = wholeNumber('percent');

const videoPriceSchema = z.strictObject({
  per_second: credits,
  default_seconds: number().int('must be a whole number of seconds').min(1, 'must be at least 1'),
  size_percent: z.record(z.string().regex(/^\d+x\d+$/, 'a size is WxH, e.g. 1080x1080'), percent).optional(),
  upsample_percent: percent.optional(),
});

const textPriceSchema = z.strictObject({
  input_per_mtok: credits,
  output_per_mtok: credits,
  cache_write_per_mtok: credits,
  cache_read_per_mtok: credits,
});

const fileSchema = z.strictObject({
  video: z.record(z.string(), videoPriceSchema).optional(),
  // Any name: an OpenAI-compatible channel may serve models the catalog has never heard of.
  text: z.record(z.string().min(1), textPriceSchema).optional(),
  text_default: textPriceSchema.optional(),
  character: credits.optional(),
});

type VideoPriceEntry = z.infer<typeof videoPriceSchema>;
type TextPriceEntry = z.infer<typeof textPriceSchema>;

const toVideoPrice = (e: VideoPriceEntry): VideoPrice => ({
  perSecond: e.per_second,
  defaultSeconds: e.default_seconds,
  ...(e.size_percent ? { sizePercent: e.size_percent } : {}),
  ...(e.upsample_percent !== undefined ? { upsamplePercent: e.upsample_percent } : {}),
});

const toTextPrice = (e: TextPriceEntry): TextPrice => ({
  inputPerMTok: e.input_per_mtok,
  outputPerMTok: e.output_per_mtok,
  cacheWritePerMTok: e.cache_write_per_mtok,
  cacheReadPerMTok: e.cache_read_per_mtok,
});

function readFile(file: string): unknown {
  try {
    // YAML 1.1 reads 3_200_000 as a number: digit separators keep seven-digit prices legible.
    // JSON is YAML too, so a .json file reads the same way.
    return YAML.parse(fs.readFileSync(file, 'utf8'), { version: '1.1' });
  } catch (err) {
    throw new ConfigError(`PRICES_FILE ${file}: ${(err as Error).message}`);
  }
}

/** DEFAULT_PRICES, or DEFAULT_PRICES with PRICES_FILE merged over it when a file is given. */
export function loadPrices(file: string | undefined): PriceTable {
  if (file === undefined) return DEFAULT_PRICES;
  // An empty (or all-comment) file overrides nothing.
  const raw = readFile(file) ?? {};
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.length > 0 ? i.path.join('.') : '(top level)'}: ${i.message}`);
    throw new ConfigError(`PRICES_FILE ${file}:\n${lines.join('\n')}`);
  }
  const data = parsed.data;
  // A video price for a model the gateway does not have could never be charged: a typo.
  const known = videoModelIds();
  for (const model of Object.keys(data.video ?? {})) {
    if (!known.includes(model)) {
      throw new ConfigError(`PRICES_FILE ${file}:\n  video.${model}: unknown video model (known: ${known.join(', ')})`);
    }
  }
  const video = Object.fromEntries(Object.entries(data.video ?? {}).map(([m, e]) => [m, toVideoPrice(e)]));
  const text = Object.fromEntries(Object.entries(data.text ?? {}).map(([m, e]) => [m, toTextPrice(e)]));
  return {
    video: { ...DEFAULT_PRICES.video, ...video },
    text: { ...DEFAULT_PRICES.text, ...text },
    textDefault: data.text_default ? toTextPrice(data.text_default) : DEFAULT_PRICES.textDefault,
    character: data.character ?? DEFAULT_PRICES.character,
  };
}
