/**
 * After the whole e2e run: `npm run audit:ledger`'s program over every store the run's
 * gateways used (each PostgreSQL database, each embedded data directory). A mismatch fails
 * the run: no test may leave a balance that differs from its ledger.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, TEST_DATA } from './processes';
import { testDatabases } from './services';

const AUDIT = path.join(ROOT, 'dist/src/billing/audit-command.js');

function audit(env: Record<string, string>): { ok: boolean; output: string } {
  const run = spawnSync(process.execPath, [AUDIT], { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'error', ...env }, encoding: 'utf8', timeout: 120_000 });
  return { ok: run.status === 0, output: `${run.stdout}${run.stderr}`.trim() };
}

export default async function globalTeardown(): Promise<void> {
  await globalThis.__E2E_STOP__?.();
  const failures: string[] = [];
  let stores = 0;
  for (const url of await testDatabases()) {
    stores++;
    const result = audit({ DATABASE_URL: url });
    if (!result.ok) failures.push(`${new URL(url).pathname.slice(1)}: ${result.output}`);
  }
  // Embedded stores: data directories holding a db/ of their own (npm start's process).
  for (const dir of fs.existsSync(TEST_DATA) ? fs.readdirSync(TEST_DATA) : []) {
    const dataDir = path.join(TEST_DATA, dir);
    if (!fs.existsSync(path.join(dataDir, 'db', 'PG_VERSION'))) continue;
    stores++;
    const result = audit({ DATA_DIR: dataDir, DATABASE_URL: '' });
    if (!result.ok) failures.push(`${dir} (embedded): ${result.output}`);
  }
  process.stdout.write(`\nledger audit (npm run audit:ledger) over ${stores} stores of this run: ${failures.length === 0 ? '0 mismatches' : 'MISMATCHES'}\n`);
  if (failures.length > 0) throw new Error(`ledger audit failed:\n${failures.join('\n')}`);
}
