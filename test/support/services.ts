import { execSync } from 'node:child_process';
import fs from 'node:fs';
import pg from 'pg';

export const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The local PostgreSQL the tests use; started (Debian cluster tools) when it is down. */
export async function ensurePostgres(): Promise<string> {
  if (await reachable(POSTGRES_URL)) return POSTGRES_URL;
  const versions = fs.existsSync('/etc/postgresql') ? fs.readdirSync('/etc/postgresql') : [];
  for (const version of versions) {
    try {
      execSync(`pg_ctlcluster --skip-systemctl-redirect ${version} main start`, { stdio: 'ignore', timeout: 30_000 });
    } catch {
      // already running or not startable: the reachability check below decides
    }
  }
  for (let i = 0; i < 40; i++) {
    if (await reachable(POSTGRES_URL)) return POSTGRES_URL;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`PostgreSQL is not reachable at ${POSTGRES_URL} and could not be started`);
}
