/**
 * The embedded store (PGlite) does not lose acknowledged money to a power loss: PostgreSQL
 * runs with fsync on, and its fsyncs reach the disk. A power loss is modelled on the files
 * themselves: every write(2) and fsync(2) the store makes is recorded, and the disk after a
 * power loss at a given moment is the store as it was before, plus, for each file, the writes
 * made before that file's last fsync up to that moment (later ones are lost). Opening that
 * image must show every commit acknowledged before the moment. (With PGlite's defaults, fsync
 * off, nothing is ever synced and the image loses them all.) The lock that keeps a second
 * process off the store is tested here too, through the store process that serves the gateway; test/e2e/embedded-store-crash.test.ts kills a
 * process with SIGKILL mid-stream.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BillingStore } from '../../src/billing/ledger';
import type { Db } from '../../src/store/db';
import type { PGlite } from '@electric-sql/pglite';
import { openEmbeddedDb } from '../../src/store/embedded-db';
import { openPGlite } from '../../src/store/embedded-pglite';
import { KeyStore } from '../../src/store/keys';
import { migrate } from '../../src/store/migrations';
import { waitFor } from '../support/ports';
import { childPids } from '../support/processes';

let root: string;
const opened: Db[] = [];
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-durable-'));
});
afterEach(async () => {
  jest.restoreAllMocks();
  for (const db of opened.splice(0)) await db.close().catch(() => undefined);
  fs.rmSync(root, { recursive: true, force: true });
});

async function open(dir: string): Promise<Db> {
  const db = await openEmbeddedDb(dir);
  opened.push(db);
  return db;
}
async function close(db: Db): Promise<void> {
  opened.splice(opened.indexOf(db), 1);
  await db.close();
}

test('PostgreSQL runs with fsync on, synchronous commits, full-page writes and its WAL synced by fsync(2)', async () => {
  const db = await open(path.join(root, 'db'));
  const rows = await db.query<{ name: string; setting: string }>(
    "select name, setting from pg_settings where name in ('fsync', 'synchronous_commit', 'full_page_writes', 'wal_sync_method') order by name",
  );
  expect(Object.fromEntries(rows.map((r) => [r.name, r.setting]))).toEqual({
    fsync: 'on',
    full_page_writes: 'on',
    synchronous_commit: 'on',
    wal_sync_method: 'fsync',
  });
});

type FileOp = { kind: 'write'; file: string; position: number; bytes: Buffer } | { kind: 'fsync'; file: string };

/** Records the store's writes and fsyncs (both PGlite's files and the sync it adds go through node:fs). */
function recordFileOps(under: string): FileOp[] {
  const ops: FileOp[] = [];
  const fileOf = (fd: number): string | null => {
    try {
      const file = fs.readlinkSync(`/proc/self/fd/${fd}`);
      return file.startsWith(under + path.sep) ? file : null;
    } catch {
      return null;
    }
  };
  const realWrite = fs.writeSync;
  jest.spyOn(fs, 'writeSync').mockImplementation(((fd: number, data: NodeJS.ArrayBufferView | string, ...rest: unknown[]) => {
    const file = fileOf(fd);
    if (file !== null) {
      if (typeof data === 'string' || typeof rest[2] !== 'number') throw new Error(`unrecorded write form on ${file}`);
      const [offset, length, position] = rest as [number | undefined, number | undefined, number];
      const start = data.byteOffset + (offset ?? 0);
      ops.push({ kind: 'write', file, position, bytes: Buffer.from(Buffer.from(data.buffer, start, length ?? data.byteLength - (offset ?? 0))) });
    }
    return (realWrite as (...a: unknown[]) => number)(fd, data, ...rest);
  }) as typeof fs.writeSync);
  for (const name of ['fsyncSync', 'fdatasyncSync'] as const) {
    const real = fs[name];
    jest.spyOn(fs, name).mockImplementation((fd: number) => {
      const file = fileOf(fd);
      if (file !== null) ops.push({ kind: 'fsync', file });
      real(fd);
    });
  }
  return ops;
}

/** The disk after a power loss once `ops[0..cut)` had happened: `before` plus what was fsynced. */
function powerLossImage(before: string, live: string, image: string, ops: readonly FileOp[], cut: number): void {
  fs.cpSync(before, image, { recursive: true });
  const lastSync = new Map<string, number>();
  ops.slice(0, cut).forEach((op, i) => op.kind === 'fsync' && lastSync.set(op.file, i));
  ops.slice(0, cut).forEach((op, i) => {
    if (op.kind !== 'write' || i > (lastSync.get(op.file) ?? -1)) return;
    const target = path.join(image, path.relative(live, op.file));
    fs.mkdirSync(path.dirname(target), { recursive: true });
    const fd = fs.openSync(target, fs.existsSync(target) ? 'r+' : 'w');
    fs.writeSync(fd, op.bytes, 0, op.bytes.length, op.position);
    fs.closeSync(fd);
  });
}

/**
 * The engine of the store process (PGlite on its durable file system) opened in this process,
 * so that its file operations can be recorded here; the store process runs the same engine.
 */
async function openEngine(dir: string): Promise<Db> {
  const pg = await openPGlite(dir);
  const sql = (q: Pick<PGlite, 'query'>) => ({
    async query<R extends object>(text: string, params: readonly unknown[] = []) {
      return (await q.query<R>(text, [...params])).rows;
    },
  });
  const db: Db = {
    kind: 'embedded',
    ...sql(pg),
    transaction: (fn) => pg.transaction((tx) => fn(sql(tx))),
    listen: async () => undefined,
    close: () => pg.close(),
  };
  opened.push(db);
  return db;
}

test('a power loss after a commit was acknowledged keeps it: only what was fsynced survives, and that is enough', async () => {
  const live = path.join(root, 'db');
  let db = await openEngine(live);
  await migrate(db);
  const key = await new KeyStore(db).issue('power', { quota: 0 });
  await close(db);
  const before = path.join(root, 'before');
  fs.cpSync(live, before, { recursive: true });

  const ops = recordFileOps(live);
  db = await openEngine(live);
  const billing = new BillingStore(db);
  const acknowledged: number[] = []; // ops.length when grant i returned
  for (let i = 0; i < 40; i++) {
    await billing.grant(key.id, 1, 'power loss test', `power-${i}`);
    acknowledged.push(ops.length);
  }
  jest.restoreAllMocks();
  expect(ops.some((op) => op.kind === 'fsync' && op.file.includes(`${path.sep}pg_wal${path.sep}`))).toBe(true);
  await close(db);

  for (const k of [0, 17, 39]) {
    const image = path.join(root, `image-${k}`, 'db');
    powerLossImage(before, live, image, ops, acknowledged[k]!);
    const recovered = await openEngine(image);
    const refs = (await recovered.query<{ ref: string }>("select ref from ledger_entries where key_id = $1 and ref like 'power-%'", [key.id])).map(
      (r) => r.ref,
    );
    for (let i = 0; i <= k; i++) expect(refs).toContain(`power-${i}`);
    const [row] = await recovered.query<{ balance: string }>('select balance from api_keys where id = $1', [key.id]);
    expect(Number(row?.balance)).toBe(refs.length);
    await close(recovered);
  }
}, 120_000);

test('the lock keeps a second opener off the store and is taken over from a dead or different owner', async () => {
  const dir = path.join(root, 'db');
  const lock = path.join(root, 'db.lock');
  const db = await open(dir);
  // This very process, a second time: it would corrupt the store as surely as another process.
  await expect(openEmbeddedDb(dir)).rejects.toThrow(new RegExp(`in use by process ${process.pid}`));
  await close(db);
  expect(fs.existsSync(lock)).toBe(false);

  // Left behind by a process killed with SIGKILL whose pid now belongs to another process
  // (here: the test runner's parent), as happens when a container restarts.
  fs.writeFileSync(lock, JSON.stringify({ pid: process.ppid, process: 'another-boot:12345' }));
  await close(await open(dir));
  // Torn or empty (a crash while it was written): stale too.
  fs.writeFileSync(lock, '');
  await close(await open(dir));
  // A live owner that is still the process that wrote it: refused (a bare pid is the earlier format).
  fs.writeFileSync(lock, String(process.ppid));
  await expect(openEmbeddedDb(dir)).rejects.toThrow(new RegExp(`in use by process ${process.ppid}`));
  expect(fs.readFileSync(lock, 'utf8')).toBe(String(process.ppid));
}, 120_000);

/** The store processes this test process runs (children whose script is the store server). */
function storeProcesses(): number[] {
  return childPids(process.pid, 'node').filter((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('embedded-server.js');
    } catch {
      return false;
    }
  });
}

test('a store process that dies is started again at once, listening where the old one did', async () => {
  const db = await open(path.join(root, 'db'));
  const heard: string[] = [];
  await db.listen('gw_restart_test', (payload) => heard.push(payload));
  const [first] = storeProcesses();
  expect(first).toBeDefined();
  process.kill(first!, 'SIGKILL');

  // What was in flight fails; statements after it are answered by a new store process.
  await waitFor('a new store process to answer', async () => (await db.query<{ one: number }>('select 1 as one'))[0]?.one === 1, 30_000);
  const now = storeProcesses();
  expect(now).toHaveLength(1);
  expect(now).not.toContain(first);
  await db.query("select pg_notify('gw_restart_test', 'after the restart')");
  await waitFor('the notification', async () => heard.includes('after the restart'), 10_000);
}, 60_000);
