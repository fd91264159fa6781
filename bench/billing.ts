/**
 * What the benchmarks bill: with `--billing on` (the default) the bench key has a quota and
 * a rate limit, so every request pays the balance check, the charge or usage entry and the
 * limiter; `--billing off` issues an unlimited key with no rate limit (charges and usage are
 * still written to the ledger, as for every key).
 */
import pg from 'pg';
import { ensurePostgres } from '../test/support/services';

export type BillingMode = 'on' | 'off';

export function billingModeOf(value: string): BillingMode {
  if (value !== 'on' && value !== 'off') throw new Error(`--billing takes on or off, not '${value}'`);
  return value;
}

/**
 * The body of POST /admin/keys for the bench key. With billing on, every limit is set high enough
 * never to refuse, so the bench measures the cost of the checks and not a cap: the text cap
 * included (TEXT_MAX_IN_FLIGHT_PER_KEY, 100 by default, is reached at 1,000 req/s once a
 * request takes 100 ms; a build before 38e066a has no such cap and refuses the field, so compare
 * against one with billing off). With billing off the body stays the bare name, which builds
 * older than billing accept.
 */
export function benchKeyBody(mode: BillingMode): Record<string, unknown> {
  return mode === 'on'
    ? { name: 'bench', quota: 1_000_000_000_000_000, rate_limit_rpm: 1_000_000, max_concurrent_tasks: 100_000, max_text_in_flight: 1_000_000 }
    : { name: 'bench' };
}

/** A PostgreSQL database of its own for a benchmark run (API and worker processes share it); its URL and a drop function. */
export async function benchDatabase(label: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const adminUrl = await ensurePostgres();
  const name = `gwbench_${label}_${Date.now()}`;
  const run = async (sql: string) => {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    try {
      await admin.query(sql);
    } finally {
      await admin.end();
    }
  };
  await run(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.href, drop: () => run(`drop database if exists ${name} with (force)`) };
}
