import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { DURABLE_START_PARAMS, DurableNodeFS, fsyncTree } from './durable-node-fs';

/**
 * The embedded store's engine: PGlite on a directory of its own, with PostgreSQL's durability
 * on (see durable-node-fs.ts): a commit is acknowledged only once its WAL is on disk, so
 * acknowledged money survives a kill -9 and a power loss alike. (PGlite's `relaxedDurability`
 * option only decides whether its own syncToFs is awaited, which on Node does nothing; it is
 * not used.) It runs in the store process (embedded-server.ts), never in the gateway's.
 *
 * MEMORY_PARAMS size PostgreSQL for a gateway's ledger, not for PGlite's defaults: 128 MB of
 * shared buffers would be touched as the tables are read, and the WebAssembly heap never gives
 * memory back. 16 MB holds the hot ledger pages many times over.
 */
const MEMORY_PARAMS = ['-c', 'shared_buffers=16MB', '-c', 'work_mem=2MB', '-c', 'maintenance_work_mem=16MB', '-c', 'wal_buffers=1MB', '-c', 'temp_buffers=2MB'];

export async function openPGlite(dir: string): Promise<PGlite> {
  fs.mkdirSync(dir, { recursive: true });
  let pg: PGlite | undefined;
  try {
    const created = !fs.existsSync(path.join(dir, 'PG_VERSION'));
    const files = new DurableNodeFS(dir);
    pg = new PGlite({ fs: files, startParams: [...DURABLE_START_PARAMS, ...MEMORY_PARAMS] });
    await pg.waitReady;
    if (created) fsyncTree(dir);
    await checkDurable(pg, files);
    return pg;
  } catch (err) {
    await pg?.close().catch(() => undefined);
    throw err;
  }
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
