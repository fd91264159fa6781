/**
 * A process that commits money to the embedded store until it is killed, for
 * test/e2e/embedded-store-crash.test.ts: `node dist/test/support/embedded-commit-child.js <dir> <key id>`
 * grants 1 credit to the key again and again, each with its own ledger reference, and prints
 * `ack <n>` once grant n was acknowledged (committed), `ready` before the first.
 */
import { BillingStore } from '../../src/billing/ledger';
import { openEmbeddedDb } from '../../src/store/embedded-db';

async function main(): Promise<void> {
  const [dir, keyId] = process.argv.slice(2);
  if (!dir || !keyId) throw new Error('usage: embedded-commit-child <store dir> <key id>');
  const db = await openEmbeddedDb(dir);
  const billing = new BillingStore(db);
  process.stdout.write('ready\n');
  for (let n = 0; ; n++) {
    await billing.grant(keyId, 1, 'crash test', `crash-${process.pid}-${n}`);
    process.stdout.write(`ack crash-${process.pid}-${n}\n`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
