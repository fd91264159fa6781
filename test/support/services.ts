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

/**
 * Every database the e2e gateways make starts with this, so the run's teardown can find (audit)
 * and drop them. E2E_DB_PREFIX gives a second checkout on the same PostgreSQL (a worktree) a
 * prefix of its own, so two runs at once do not drop each other's databases; it must not begin
 * with another run's prefix.
 */
export const TEST_DB_PREFIX = /^[a-z][a-z0-9_]{0,20}$/.test(process.env.E2E_DB_PREFIX ?? '') ? process.env.E2E_DB_PREFIX! : 'gwtest_';

/** A fresh PostgreSQL database for one gateway (its keys, balances and ledger); its URL. */
export async function createTestDatabase(label: string): Promise<string> {
  const adminUrl = await ensurePostgres();
  const name = `${TEST_DB_PREFIX}${label.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`drop database if exists ${name}`);
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.href;
}

/** The URLs of the e2e gateways' databases left by this (or an earlier) run. */
export async function testDatabases(): Promise<string[]> {
  const adminUrl = await ensurePostgres();
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const rows = (
      await admin.query<{ datname: string }>('select datname from pg_database where left(datname, length($1)) = $1 order by datname', [TEST_DB_PREFIX])
    ).rows;
    return rows.map((r) => {
      const url = new URL(adminUrl);
      url.pathname = `/${r.datname}`;
      return url.href;
    });
  } finally {
    await admin.end();
  }
}

export async function dropTestDatabases(): Promise<void> {
  const adminUrl = await ensurePostgres();
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    for (const url of await testDatabases()) await admin.query(`drop database if exists ${new URL(url).pathname.slice(1)} with (force)`);
  } finally {
    await admin.end();
  }
}
