/**
 * One real Temporal dev server and one provider simulator for the whole e2e run; each test
 * file starts its own API and worker processes on its own task queue (see stack.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { createLogger } from '../../src/log';
import { startDevServer } from '../../src/temporal/dev-server';
import { freePort, waitFor } from './ports';
import { dropTestDatabases } from './services';
import { ROOT, TEST_DATA, runNode } from './processes';

declare global {
  var __E2E_STOP__: (() => Promise<void>) | undefined;
}

export default async function globalSetup(): Promise<void> {
  for (const f of ['dist/src/api/server.js', 'dist/src/worker.js', 'dist/simulator/main.js', 'dist/workflow-bundle.js', 'dist/workflow-bundle-traced.js']) {
    if (!fs.existsSync(path.join(ROOT, f))) throw new Error(`${f} is missing: run the tests with \`npm test\` (it builds first).`);
  }
  const cli = path.join(ROOT, '.tools/temporal/bin/temporal');
  if (!fs.existsSync(cli)) throw new Error('the temporal CLI is missing: run `npm test` (it installs it).');
  fs.rmSync(TEST_DATA, { recursive: true, force: true });
  // Each gateway gets a PostgreSQL database of its own (stack.ts); an earlier run's are dropped.
  await dropTestDatabases();
  fs.mkdirSync(TEST_DATA, { recursive: true });

  const temporal = await startDevServer({
    cliPath: cli,
    dataDir: TEST_DATA,
    port: await freePort(),
    uiPort: await freePort(),
    namespace: 'default',
    logger: createLogger('error', 'e2e'),
    headless: true,
  });
  const address = temporal.address;

  const simPort = await freePort();
  const simulator = runNode('dist/simulator/main.js', { HOST: '127.0.0.1', SIMULATOR_PORT: String(simPort), SIMULATOR_JOB_MS: '1500' }, 'simulator');
  const simUrl = `http://127.0.0.1:${simPort}`;
  await waitFor('simulator', async () => (await fetch(`${simUrl}/_sim/health`)).ok, 20_000);

  process.env.E2E_TEMPORAL_ADDRESS = address;
  process.env.E2E_SIMULATOR_URL = simUrl;
  globalThis.__E2E_STOP__ = async () => {
    await simulator.stop();
    await temporal.stop();
  };
}
