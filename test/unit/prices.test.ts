/**
 * The price table of unified billing: every catalog model has a default price, video tasks
 * bill seconds x size x upsample, text usage is priced exactly (BigInt, one ceil), and
 * PRICES_FILE overrides merge over the defaults or fail start-up with a readable ConfigError.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { VIDEO_MODELS } from '../../src/catalog/models';
import { characterPrice, DEFAULT_PRICES, PriceError, type PriceTable, textUsagePrice, videoTaskPrice } from '../../src/billing/prices';
import { DEFAULT_OPENAI_TEXT_MODELS, NATIVE_TEXT_MODELS } from '../../src/catalog/text-models';
import { ConfigError } from '../../src/config/env';
import { loadPrices } from '../../src/billing/price-config';
import type { TextUsage } from '../../src/providers/usage';

const usage = (u: Partial<TextUsage>): TextUsage => ({ inputTokens: 0, outputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0, ...u });

/** The error a call throws (fails the test when it throws nothing). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

describe('default price table', () => {
  it('prices every video model of the catalog, and nothing else', () => {
    for (const m of VIDEO_MODELS) {
      expect({ model: m.id, price: DEFAULT_PRICES.video[m.id] }).toEqual({ model: m.id, price: expect.any(Object) });
      expect(videoTaskPrice(DEFAULT_PRICES, { model: m.id })).toBeGreaterThan(0);
    }
    expect(Object.keys(DEFAULT_PRICES.video).sort()).toEqual(VIDEO_MODELS.map((m) => m.id).sort());
  });

  it('bills motion models for their default duration, and /v1/videos models a second count they allow', () => {
    for (const m of VIDEO_MODELS) {
      const price = DEFAULT_PRICES.video[m.id];
      if (m.durations) expect({ model: m.id, seconds: price?.defaultSeconds }).toEqual({ model: m.id, seconds: m.durations[0] });
      if (m.seconds) expect(m.seconds).toContain(price?.defaultSeconds);
    }
  });

  it('prices every native and default OpenAI text model', () => {
    for (const model of [...NATIVE_TEXT_MODELS, ...DEFAULT_OPENAI_TEXT_MODELS]) {
      expect({ model, listed: Object.hasOwn(DEFAULT_PRICES.text, model) }).toEqual({ model, listed: true });
    }
  });

  it('holds only non-negative safe integers', () => {
    const values: number[] = [DEFAULT_PRICES.character];
    for (const v of Object.values(DEFAULT_PRICES.video)) {
      values.push(v.perSecond, v.defaultSeconds, ...Object.values(v.sizePercent ?? {}), v.upsamplePercent ?? 0);
    }
    for (const t of [...Object.values(DEFAULT_PRICES.text), DEFAULT_PRICES.textDefault]) values.push(...Object.values(t));
    for (const v of values) expect(Number.isSafeInteger(v) && v >= 0).toBe(true);
  });

  it('has the list prices of the text models', () => {
    expect(DEFAULT_PRICES.text['cm-opus-4-5-20251101']).toEqual({
      inputPerMTok: 5_000_000,
      outputPerMTok: 25_000_000,
      cacheWritePerMTok: 6_250_000,
      cacheReadPerMTok: 500_000,
    });
    expect(DEFAULT_PRICES.text['cm-haiku-4.5']).toEqual({
      inputPerMTok: 1_000_000,
      outputPerMTok: 5_000_000,
      cacheWritePerMTok: 1_250_000,
      cacheReadPerMTok: 100_000,
    });
    expect(DEFAULT_PRICES.text['gpt-4o-mini']).toEqual({ inputPerMTok: 150_000, outputPerMTok: 600_000, cacheWritePerMTok: 150_000, cacheReadPerMTok: 75_000 });
    expect(DEFAULT_PRICES.textDefault).toEqual(DEFAULT_PRICES.text['gpt-4o']);
  });
});

describe('videoTaskPrice', () => {
  it('bills a vidgen3 task for 8 seconds at $0.40/s', () => {
    expect(videoTaskPrice(DEFAULT_PRICES, { model: 'vidgen3' })).toBe(3_200_000);
  });

  it('bills the seconds the request names', () => {
    expect(videoTaskPrice(DEFAULT_PRICES, { model: 'vidgen_3_1', seconds: 4 })).toBe(1_600_000);
    expect(videoTaskPrice(DEFAULT_PRICES, { model: 'motion-2', seconds: 25 })).toBe(2_500_000);
    expect(videoTaskPrice(DEFAULT_PRICES, { model: 'motion-2' })).toBe(1_000_000);
  });

  it('applies a listed size multiplier, and 100% for other sizes', () => {
    expect(videoTaskPrice(DEFAULT_PRICES, { model: 'motion-2', size: '1080x1080' })).toBe(1_500_000);
    expect(videoTaskPrice(DEFAULT_PRICES, { model: 'motion-2-pro', seconds: 15, size: '1080x1080' })).toBe(6_750_000);
    expect(videoTaskPrice(DEFAULT_PRICES, { model: 'motion-2', size: '1280x720' })).toBe(1_000_000);
    expect(videoTaskPrice(DEFAULT_PRICES, { model: 'vidgen3', size: '1080x1080' })).toBe(3_200_000);
  });

  it('adds the upsample surcharge only when asked, and none by default', () => {
    const table: PriceTable = {
      ...DEFAULT_PRICES,
      video: { ...DEFAULT_PRICES.video, vidgen3: { perSecond: 400_000, defaultSeconds: 8, upsamplePercent: 25 } },
    };
    expect(videoTaskPrice(table, { model: 'vidgen3', enableUpsample: true })).toBe(4_000_000);
    expect(videoTaskPrice(table, { model: 'vidgen3', enableUpsample: false })).toBe(3_200_000);
    expect(videoTaskPrice(DEFAULT_PRICES, { model: 'vidgen3', enableUpsample: true })).toBe(3_200_000);
  });

  it('rounds up once, after size and upsample are both applied', () => {
    // 1 x 1.01 x 1.01 = 1.0201 -> 2 (rounding after each step would give 3).
    const table: PriceTable = { ...DEFAULT_PRICES, video: { x: { perSecond: 1, defaultSeconds: 1, sizePercent: { '1x1': 101 }, upsamplePercent: 1 } } };
    expect(videoTaskPrice(table, { model: 'x', size: '1x1', enableUpsample: true })).toBe(2);
  });

  it('prices a remix like a new task of the same model and seconds', () => {
    expect(videoTaskPrice(DEFAULT_PRICES, { model: 'motion-2-pro', seconds: 15, remix: true })).toBe(
      videoTaskPrice(DEFAULT_PRICES, { model: 'motion-2-pro', seconds: 15 }),
    );
  });

  it('refuses an unknown model and impossible seconds with a PriceError', () => {
    expect(thrown(() => videoTaskPrice(DEFAULT_PRICES, { model: 'vidgen9' }))).toBeInstanceOf(PriceError);
    expect(thrown(() => videoTaskPrice(DEFAULT_PRICES, { model: 'toString' }))).toBeInstanceOf(PriceError);
    expect(thrown(() => videoTaskPrice(DEFAULT_PRICES, { model: 'motion-2', seconds: 0 }))).toBeInstanceOf(PriceError);
    expect(thrown(() => videoTaskPrice(DEFAULT_PRICES, { model: 'motion-2', seconds: 1.5 }))).toBeInstanceOf(PriceError);
  });
});

describe('textUsagePrice', () => {
  it('rounds a fraction of a credit up', () => {
    expect(textUsagePrice(DEFAULT_PRICES, 'cm-haiku-4.5', usage({ inputTokens: 1 }))).toBe(1);
    expect(textUsagePrice(DEFAULT_PRICES, 'gpt-4o-mini', usage({ inputTokens: 1 }))).toBe(1); // 0.15
    expect(textUsagePrice(DEFAULT_PRICES, 'gpt-4o-mini', usage({}))).toBe(0);
  });

  it('rounds once over the sum, not per token kind', () => {
    // 0.15 + 0.60 = 0.75 -> 1, not 1 + 1.
    expect(textUsagePrice(DEFAULT_PRICES, 'gpt-4o-mini', usage({ inputTokens: 1, outputTokens: 1 }))).toBe(1);
    // 0.15 + 5.40 + 0.45 is exactly 6; summing floats gives 6.000000000000001 and would bill 7.
    expect(textUsagePrice(DEFAULT_PRICES, 'gpt-4o-mini', usage({ inputTokens: 1, outputTokens: 9, cacheReadTokens: 6 }))).toBe(6);
  });

  it('prices input, output, cache writes and cache reads at their own rates', () => {
    // 1000 x 5 + 500 x 25 + 2000 x 6.25 + 10000 x 0.5 micro-USD
    const u = usage({ inputTokens: 1000, outputTokens: 500, cacheCreationTokens: 2000, cacheReadTokens: 10_000 });
    expect(textUsagePrice(DEFAULT_PRICES, 'cm-opus-4-5-20251101', u)).toBe(35_000);
    expect(textUsagePrice(DEFAULT_PRICES, 'cm-sonnet-4.5', usage({ cacheCreationTokens: 1_000_000 }))).toBe(3_750_000);
    expect(textUsagePrice(DEFAULT_PRICES, 'cm-sonnet-4.5', usage({ cacheReadTokens: 1_000_000 }))).toBe(300_000);
    expect(textUsagePrice(DEFAULT_PRICES, 'gpt-4.1', usage({ inputTokens: 1_000_000, outputTokens: 1_000_000 }))).toBe(10_000_000);
  });

  it('prices a model not in the table at textDefault', () => {
    expect(textUsagePrice(DEFAULT_PRICES, 'some-new-model', usage({ inputTokens: 1_000_000 }))).toBe(2_500_000);
    expect(textUsagePrice(DEFAULT_PRICES, 'constructor', usage({ outputTokens: 1_000_000 }))).toBe(10_000_000);
  });

  it('stays exact for huge counts', () => {
    expect(textUsagePrice(DEFAULT_PRICES, 'cm-opus-4-5-20251101', usage({ outputTokens: 1_000_000_000 }))).toBe(25_000_000_000);
    // 150,000,000.15 credits -> 150,000,001
    expect(textUsagePrice(DEFAULT_PRICES, 'gpt-4o-mini', usage({ inputTokens: 1_000_000_001 }))).toBe(150_000_001);
    // Products beyond 2^53: 3,000,000,001 x 25,000,000 + 7 x 5,000,000 micro-micro-USD.
    const big = usage({ inputTokens: 7, outputTokens: 3_000_000_001, cacheCreationTokens: 1_000_000_000_000, cacheReadTokens: 3 });
    expect(textUsagePrice(DEFAULT_PRICES, 'cm-opus-4-5-20251101', big)).toBe(75_000_000_025 + 35 + 6_250_000_000_000 + 2);
  });

  it('agrees with exact BigInt arithmetic on either side of 2^53', () => {
    const p = DEFAULT_PRICES.text['cm-opus-4-5-20251101']!;
    const exact = (u: ReturnType<typeof usage>) => {
      const n =
        BigInt(u.inputTokens) * BigInt(p.inputPerMTok) +
        BigInt(u.outputTokens) * BigInt(p.outputPerMTok) +
        BigInt(u.cacheCreationTokens) * BigInt(p.cacheWritePerMTok) +
        BigInt(u.cacheReadTokens) * BigInt(p.cacheReadPerMTok);
      return Number((n + 999_999n) / 1_000_000n);
    };
    // Each term below 2^53 while the sum is above it, and sums just below and at a multiple of 10^6.
    const cases = [
      usage({ inputTokens: 1_000_000_000, outputTokens: 300_000_000, cacheCreationTokens: 1_000_000_000 }),
      usage({ inputTokens: 360_287_970, outputTokens: 1 }),
      usage({ inputTokens: 199_999, cacheReadTokens: 2 }),
      usage({ inputTokens: 200_000 }),
    ];
    let seed = 7;
    const next = (max: number) => (seed = (seed * 48_271) % 2_147_483_647) % max;
    for (let i = 0; i < 500; i += 1) {
      const scale = 10 ** next(10);
      cases.push(usage({ inputTokens: next(scale), outputTokens: next(scale), cacheCreationTokens: next(scale), cacheReadTokens: next(scale) }));
    }
    for (const u of cases) expect(textUsagePrice(DEFAULT_PRICES, 'cm-opus-4-5-20251101', u)).toBe(exact(u));
  });

  it('refuses a negative or fractional token count', () => {
    expect(thrown(() => textUsagePrice(DEFAULT_PRICES, 'gpt-4o', usage({ inputTokens: -1 })))).toBeInstanceOf(PriceError);
    expect(thrown(() => textUsagePrice(DEFAULT_PRICES, 'gpt-4o', usage({ outputTokens: 0.5 })))).toBeInstanceOf(PriceError);
  });
});

describe('characterPrice', () => {
  it('is $0.10 by default', () => {
    expect(characterPrice(DEFAULT_PRICES)).toBe(100_000);
  });
});

describe('loadPrices', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-prices-'));
  });
  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  let fileCount = 0;
  function writeFile(ext: string, text: string): string {
    const file = path.join(dir, `prices-${++fileCount}.${ext}`);
    fs.writeFileSync(file, text);
    return file;
  }

  /** The ConfigError message of loading a file (fails the test when it loads or throws something else). */
  function configError(text: string, ext = 'yaml'): string {
    const err = thrown(() => loadPrices(writeFile(ext, text)));
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).message;
  }

  it('gives the defaults without a file', () => {
    expect(loadPrices(undefined)).toEqual(DEFAULT_PRICES);
  });

  it('overrides one model and keeps every other default', () => {
    const table = loadPrices(writeFile('yaml', 'video:\n  vidgen3:\n    per_second: 450_000\n    default_seconds: 6\n'));
    expect(videoTaskPrice(table, { model: 'vidgen3' })).toBe(2_700_000);
    expect(table.video.vidgen2).toEqual(DEFAULT_PRICES.video.vidgen2);
    expect(table.video['motion-2']).toEqual(DEFAULT_PRICES.video['motion-2']);
    expect(table.text).toEqual(DEFAULT_PRICES.text);
    expect(table.textDefault).toEqual(DEFAULT_PRICES.textDefault);
    expect(table.character).toBe(DEFAULT_PRICES.character);
    // The defaults themselves are untouched.
    expect(videoTaskPrice(DEFAULT_PRICES, { model: 'vidgen3' })).toBe(3_200_000);
  });

  it('replaces a model entry whole (a size_percent left out is gone)', () => {
    const table = loadPrices(writeFile('yaml', 'video:\n  motion-2:\n    per_second: 100000\n    default_seconds: 10\n'));
    expect(videoTaskPrice(table, { model: 'motion-2', size: '1080x1080' })).toBe(1_000_000);
  });

  it('reads JSON, text prices for any model, text_default and character', () => {
    const text = { input_per_mtok: 1, output_per_mtok: 2, cache_write_per_mtok: 3, cache_read_per_mtok: 4 };
    const table = loadPrices(writeFile('json', JSON.stringify({ text: { 'my-llama': text, 'gpt-4o': text }, text_default: text, character: 7 })));
    expect(textUsagePrice(table, 'my-llama', usage({ inputTokens: 1_000_000, outputTokens: 1_000_000 }))).toBe(3);
    expect(textUsagePrice(table, 'gpt-4o', usage({ cacheReadTokens: 1_000_000 }))).toBe(4);
    expect(textUsagePrice(table, 'unlisted', usage({ cacheCreationTokens: 1_000_000 }))).toBe(3);
    expect(table.text['cm-haiku-4.5']).toEqual(DEFAULT_PRICES.text['cm-haiku-4.5']);
    expect(characterPrice(table)).toBe(7);
  });

  it('treats an empty file as no overrides', () => {
    expect(loadPrices(writeFile('yaml', '# nothing yet\n'))).toEqual(DEFAULT_PRICES);
  });

  it('refuses a negative price, naming where it is', () => {
    const message = configError('video:\n  vidgen3:\n    per_second: -1\n    default_seconds: 8\n');
    expect(message).toContain('PRICES_FILE');
    expect(message).toContain('video.vidgen3.per_second: must not be negative');
  });

  it('refuses a fractional price', () => {
    expect(configError('character: 0.5\n')).toContain('character: must be a whole number');
  });

  it('refuses an unknown key, naming it and where it is', () => {
    const message = configError('video:\n  vidgen3:\n    per_secnd: 1\n    per_second: 1\n    default_seconds: 8\n');
    expect(message).toContain('video.vidgen3');
    expect(message).toContain('per_secnd');
    expect(configError('charcter: 1\n')).toMatch(/\(top level\).*charcter/);
  });

  it('refuses a video model the gateway does not have, but not an unknown text model', () => {
    const message = configError('video:\n  vidgen9:\n    per_second: 1\n    default_seconds: 8\n');
    expect(message).toContain('video.vidgen9: unknown video model');
    expect(message).toContain('vidgen3');
    const table = loadPrices(
      writeFile(
        'yaml',
        'text:\n  not-in-any-catalog:\n    input_per_mtok: 9\n    output_per_mtok: 9\n    cache_write_per_mtok: 9\n    cache_read_per_mtok: 9\n',
      ),
    );
    expect(table.text['not-in-any-catalog']?.inputPerMTok).toBe(9);
  });

  it('refuses an entry missing a field, and a size that is not WxH', () => {
    expect(configError('text:\n  m:\n    input_per_mtok: 1\n    output_per_mtok: 1\n    cache_write_per_mtok: 1\n')).toContain('text.m.cache_read_per_mtok');
    expect(configError('video:\n  motion-2:\n    per_second: 1\n    default_seconds: 10\n    size_percent: { big: 150 }\n')).toContain(
      'video.motion-2.size_percent.big',
    );
  });

  it('refuses an unreadable or malformed file', () => {
    const missing = thrown(() => loadPrices(path.join(dir, 'nope.yaml')));
    expect(missing).toBeInstanceOf(ConfigError);
    expect((missing as Error).message).toContain('PRICES_FILE');
    expect(configError('video: [unclosed\n')).toContain('PRICES_FILE');
    expect(configError('- a list\n')).toContain('(top level)');
  });

  it('parses prices.example.yaml', () => {
    const table = loadPrices(path.join(__dirname, '../../prices.example.yaml'));
    expect(videoTaskPrice(table, { model: 'vidgen3' })).toBe(3_600_000);
    expect(videoTaskPrice(table, { model: 'vidgen3', enableUpsample: true })).toBe(4_500_000);
    expect(videoTaskPrice(table, { model: 'motion-2-pro', size: '1080x1080' })).toBe(5_100_000);
    expect(videoTaskPrice(table, { model: 'motion-2-pro', size: '480x480' })).toBe(2_400_000);
    expect(textUsagePrice(table, 'my-local-llama', usage({ outputTokens: 1_000_000 }))).toBe(200_000);
    expect(characterPrice(table)).toBe(150_000);
    expect(table.video.vidgen2).toEqual(DEFAULT_PRICES.video.vidgen2);
  });
});
