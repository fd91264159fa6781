/** The `npm run audit:ledger` entry point: see audit.ts. */
import { loadConfig } from '../config/env';
import { auditLedger } from './audit';
import { openStore } from '../store/open';

async function main(): Promise<void> {
  const config = loadConfig();
  const db = await openStore(config);
  try {
    const report = await auditLedger(db);
    const where = config.env.DATABASE_URL ? 'PostgreSQL (DATABASE_URL)' : `embedded store in ${config.dataDir}`;
    process.stdout.write(`ledger audit of ${where}: ${report.keys} keys, ${report.entries} entries, ${report.tasks} paid tasks\n`);
    for (const m of report.mismatches) process.stdout.write(`MISMATCH ${JSON.stringify(m)}\n`);
    process.stdout.write(`${report.mismatches.length} mismatches\n`);
    process.exitCode = report.mismatches.length === 0 ? 0 : 1;
  } finally {
    await db.close();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(2);
});
