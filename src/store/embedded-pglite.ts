import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import type { Db, Sql } from './db';
import { DURABLE_START_PARAMS, DurableNodeFS, fsyncTree } from './durable-node-fs';
import { acquireEmbeddedLock } from './embedded-lock';

/**
 * The embedded store: PGlite on a directory of its own, owned by one process (see
 * embedded-lock.ts), with PostgreSQL's durability on (see durable-node-fs.ts): a commit is
 * acknowledged only once its WAL is on disk, so acknowledged money survives a kill -9 and a
 * power loss alike. (PGlite's `relaxedDurability` option only decides whether its own
 * syncToFs is awaited, which on Node does nothing; it is not used.)
 */
export async function openEmbeddedDb(dir: string): Promise<Db> {
  fs.mkdirSync(dir, { recursive: true });
  const release = acquireEmbeddedLock(path.join(path.dirname(dir), `${path.basename(dir)}.lock`));
  let pg: PGlite | undefined;
  try {
    const created = !fs.existsSync(path.join(dir, 'PG_VERSION'));
    const files = new DurableNodeFS(dir);
    pg = new PGlite({ fs: files, startParams: [...DURABLE_START_PARAMS] });
    await pg.waitReady;
    if (created) fsyncTree(dir);
    await checkDurable(pg, files);
  } catch (err) {
    await pg?.close().catch(() => undefined);
    release();
    throw err;
  }
  const db = pg;
  const asSql = (q: { query: PGlite['query'] }): Sql => ({
    async query<R extends object>(text: string, params: readonly unknown[] = []) {
      return (await q.query<R>(text, [...params])).rows;
    },
  });
  return {
    kind: 'embedded',
    ...asSql(db),
    transaction: (fn) => db.transaction((tx) => fn(asSql(tx))),
    async listen(channel, onNotify) {
      await db.listen(channel, onNotify);
    },
    async close() {
      await db.close();
      release();
    },
  };
}

/**
 * Refuses to run without durability rather than losing money silently: fsync must be on, and
 * a commit must reach a real fsync (it would not if a PGlite upgrade changed how its files are
 * written). One transaction that takes a transaction id costs one commit, one fsync.
 */
async function checkDurable(pg: PGlite, files: DurableNodeFS): Promise<void> {
  const [setting] = (await pg.query<{ fsync: string }>('show fsync')).rows;
  const before = files.fsyncs;
  await pg.query("select pg_logical_emit_message(true, 'gateway', 'durability check')");
  if (setting?.fsync !== 'on' || files.fsyncs === before) {
    throw new Error('the embedded store cannot make its commits durable with this PGlite build (fsync is not reaching the disk)');
  }
}
