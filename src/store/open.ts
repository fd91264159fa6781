import path from 'node:path';
import type { Config } from '../config/env';
import type { Db } from './db';
import { openEmbeddedDb } from './embedded-db';
import { openPostgresDb } from './postgres-db';
import { migrate } from './migrations';

export async function openStore(config: Config): Promise<Db> {
  const db = config.env.DATABASE_URL ? await openPostgresDb(config.env.DATABASE_URL) : await openEmbeddedDb(path.join(config.dataDir, 'db'));
  await migrate(db);
  return db;
}
