/**
 * The embedded store keeps every acknowledged commit across a SIGKILL: a child process grants
 * credits to a key one commit at a time and reports each acknowledged grant; it is killed
 * mid-stream, twice; the store then opens (taking over the dead process's lock and recovering
 * PostgreSQL) and holds every reported grant, with a balance equal to its ledger. Power loss is
 * covered by test/unit/embedded-store-durability.test.ts.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { auditLedger } from '../../src/billing/audit';
import { openEmbeddedDb } from '../../src/store/embedded-db';
import { KeyStore } from '../../src/store/keys';
import { migrate } from '../../src/store/migrations';
import { ROOT, TEST_DATA } from '../support/processes';

const dir = path.join(TEST_DATA, 'embedded-crash', 'db');

/** Runs the child until it reported `ackCount` grants (and maybe more), then SIGKILLs it mid-stream. */
function commitThenKill(keyId: string, ackCount: number): Promise<string[]> {
  const child = spawn(process.execPath, [path.join(ROOT, 'dist/test/support/embedded-commit-child.js'), dir, keyId], { stdio: ['ignore', 'pipe', 'pipe'] });
  const acked: string[] = [];
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  let buffered = '';
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      buffered += d.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) if (line.startsWith('ack ')) acked.push(line.slice(4));
      // Killed while it is committing, between and during grants, not at a quiet moment.
      if (acked.length >= ackCount && child.exitCode === null) child.kill('SIGKILL');
    });
    child.once('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve(acked);
      else reject(new Error(`the child exited with ${code}: ${stderr}`));
    });
  });
}

test('every grant acknowledged before a SIGKILL is in the store after it', async () => {
  fs.rmSync(path.dirname(dir), { recursive: true, force: true });
  let db = await openEmbeddedDb(dir);
  await migrate(db);
  const key = await new KeyStore(db).issue('crash', { quota: 0 });
  await db.close();

  const acknowledged = [...(await commitThenKill(key.id, 60)), ...(await commitThenKill(key.id, 25))];
  expect(acknowledged.length).toBeGreaterThanOrEqual(85);
  // The killed child's lock is still there, naming a dead process.
  expect(fs.existsSync(`${dir}.lock`)).toBe(true);

  db = await openEmbeddedDb(dir);
  try {
    const refs = new Set(
      (await db.query<{ ref: string }>("select ref from ledger_entries where key_id = $1 and kind = 'grant' and ref like 'crash-%'", [key.id])).map(
        (r) => r.ref,
      ),
    );
    // Grants committed after the last ack the test read are there too; none acknowledged is missing.
    expect(acknowledged.filter((ref) => !refs.has(ref))).toEqual([]);
    const [row] = await db.query<{ balance: string }>('select balance from api_keys where id = $1', [key.id]);
    expect(Number(row?.balance)).toBe(refs.size);
    expect((await auditLedger(db)).mismatches).toEqual([]);
  } finally {
    await db.close();
  }
}, 180_000);
