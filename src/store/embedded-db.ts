import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import type { Db, Sql } from './db';

/**
 * PGlite keeps its files in one directory and must have a single owner process; a pid lock
 * turns a second opener (say `npm run api` and `npm run worker` both embedded) into a clear
 * error instead of a corrupted store. Scale-out deployments set DATABASE_URL.
 */
function acquireLock(lockFile: string): () => void {
  try {
    const pid = Number(fs.readFileSync(lockFile, 'utf8'));
    if (pid && pid !== process.pid && isAlive(pid)) {
      throw new Error(
        `The embedded store at ${path.dirname(lockFile)} is in use by process ${pid}. ` +
          'The embedded store serves one process; run the API and worker together with `npm start`, ' +
          'or set DATABASE_URL to share a PostgreSQL database.',
      );
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fs.writeFileSync(lockFile, String(process.pid));
  return () => fs.rmSync(lockFile, { force: true });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function openEmbeddedDb(dir: string): Promise<Db> {
  fs.mkdirSync(dir, { recursive: true });
  const release = acquireLock(path.join(path.dirname(dir), `${path.basename(dir)}.lock`));
  const pg = new PGlite(dir);
  await pg.waitReady;
  const asSql = (q: { query: PGlite['query'] }): Sql => ({
    async query<R extends object>(text: string, params: readonly unknown[] = []) {
      return (await q.query<R>(text, [...params])).rows;
    },
  });
  return {
    kind: 'embedded',
    ...asSql(pg),
    transaction: (fn) => pg.transaction((tx) => fn(asSql(tx))),
    async listen(channel, onNotify) {
      await pg.listen(channel, onNotify);
    },
    async close() {
      await pg.close();
      release();
    },
  };
}
