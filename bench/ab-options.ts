/** Options shared by the benchmarks (bench:text, bench:peers, bench:text-ab, bench:video-ab, bench:memory). */
import fs from 'node:fs';
import path from 'node:path';

/** `--name value` from argv, or the fallback. */
export function optionOf(argv: string[]) {
  return (name: string, fallback: string): string => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 && argv[i + 1] ? argv[i + 1]! : fallback;
  };
}

/** A numeric option of at least `min` (an integer when `integer` is set), or an error naming it. */
export function numberOption(get: (name: string, fallback: string) => string, name: string, fallback: string, min: number, integer = false): number {
  const value = Number(get(name, fallback));
  if (!(integer ? Number.isInteger(value) : Number.isFinite(value)) || value < min) {
    throw new Error(`--${name}: expected ${integer ? 'an integer' : 'a number'} >= ${min}`);
  }
  return value;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** --log-level for the gateway a benchmark starts (pino's levels), default info. */
export function logLevelOption(get: (name: string, fallback: string) => string): string {
  const logLevel = get('log-level', 'info');
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) throw new Error(`--log-level: one of ${LOG_LEVELS.join(', ')}`);
  return logLevel;
}

/** The checkout named by --against, made absolute, once each of `entries` (built files) is there. */
export function againstCheckout(value: string, entries: readonly string[]): string {
  if (!value) throw new Error('--against DIR is required: a checkout of the gateway to compare with, built (node scripts/setup.mjs --build)');
  const dir = path.resolve(value);
  for (const entry of entries) {
    if (!fs.existsSync(path.join(dir, entry)))
      throw new Error(`--against: ${path.join(dir, entry)} does not exist; build that checkout first (node scripts/setup.mjs --build)`);
  }
  return dir;
}
