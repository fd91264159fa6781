/**
 * The two stores a unit test runs against: the embedded one (PGlite, in a temporary
 * directory) and PostgreSQL on 127.0.0.1:5432 (a throwaway database), migrated alike.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Db } from '../../src/store/db';
import { openEmbeddedDb } from '../../src/store/embedded-db';
import { openPostgresDb } from '../../src/store/postgres-db';
import { auditLedger } from '../../src/billing/audit';
import { BillingStore } from '../../src/billing/ledger';
import { KeyStore } from '../../src/store/keys';
import { migrate } from '../../src/store/migrations';
import { ensurePostgres } from './services';

export type OpenedStore = { db: Db; cleanup: () => Promise<void> };

export async function embeddedStore(): Promise<OpenedStore> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-store-'));
  const db = await openEmbeddedDb(path.join(dir, 'db'));
  return { db, cleanup: async () => (await db.close(), fs.rmSync(dir, { recursive: true, force: true })) };
}

export async function postgresStore(maxConnections?: number): Promise<OpenedStore> {
  const adminUrl = await ensurePostgres();
  const name = `gw_test_${process.pid}_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db = await openPostgresDb(url.href, maxConnections);
  return {
    db,
    cleanup: async () => {
      await db.close();
      const a = new pg.Client({ connectionString: adminUrl });
      await a.connect();
      await a.query(`drop database if exists ${name} with (force)`);
      await a.end();
    },
  };
}

export const BOTH_STORES = [
  ['embedded (PGlite)', embeddedStore],
  ['PostgreSQL', postgresStore],
] as const;

/** A store opened and migrated for the money tests, with its key store and ledger. */
export async function openLedgerStore(open: () => Promise<OpenedStore>): Promise<{ opened: OpenedStore; keys: KeyStore; billing: BillingStore }> {
  const opened = await open();
  await migrate(opened.db);
  return { opened, keys: new KeyStore(opened.db), billing: new BillingStore(opened.db) };
}

/** After the money tests: the ledger audit's mismatches (none, whatever they did), then the store goes. */
export async function auditAndClose(opened: OpenedStore | undefined): Promise<unknown[]> {
  if (!opened) return [];
  try {
    return (await auditLedger(opened.db)).mismatches;
  } finally {
    await opened.cleanup();
  }
}
