/**
 * The embedded Temporal's first start (temporal/dev-server-supervisor.ts): a server process that
 * exits during start-up is started again, since the cause is often a port its CLI picked being
 * taken by a process starting beside it; a start that cannot succeed still fails at once.
 * The CLI is the real one, behind a wrapper that makes its first N runs exit.
 */
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { temporalCliPath } from '../../src/config/paths';
import { superviseDevServer, type SupervisedDevServer } from '../../src/temporal/dev-server-supervisor';
import { freePort } from '../support/ports';
import { TEST_DATA } from '../support/processes';

const logger = pino({ level: 'silent' });
const policy = { initialDelayMs: 100, maxDelayMs: 1000, maxRestarts: 5, windowMs: 60_000 };
let server: SupervisedDevServer | undefined;

afterEach(async () => {
  await server?.stop();
  server = undefined;
});

/** A CLI that exits 1 (as on "address already in use") its first `failures` runs, then is the real one. */
function flakyCli(dir: string, failures: number): { cli: string; runs: () => number } {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const count = path.join(dir, 'runs');
  const cli = path.join(dir, 'temporal');
  fs.writeFileSync(
    cli,
    `#!/bin/sh\necho x >> '${count}'\nif [ "$(wc -l < '${count}')" -le ${failures} ]; then echo 'listen tcp 127.0.0.1:1: bind: address already in use' >&2; exit 1; fi\nexec '${temporalCliPath()}' "$@"\n`,
    { mode: 0o755 },
  );
  return { cli, runs: () => (fs.existsSync(count) ? fs.readFileSync(count, 'utf8').split('\n').filter(Boolean).length : 0) };
}

async function start(dir: string, cliPath: string): Promise<SupervisedDevServer> {
  return superviseDevServer({
    cliPath,
    dataDir: path.join(dir, 'data'),
    port: await freePort(),
    uiPort: await freePort(),
    namespace: 'default',
    logger,
    headless: true,
    policy,
    onGiveUp: () => undefined,
    hungAfterMs: 0,
  });
}

test('a server that exits during its first start is started again, and then serves', async () => {
  const dir = path.join(TEST_DATA, 'dev-server-start-flaky');
  const { cli, runs } = flakyCli(dir, 2);
  server = await start(dir, cli);
  expect(runs()).toBe(3);
  expect(server.state()).toBe('running');
}, 120_000);

test('a server that keeps exiting during start-up fails the start after three attempts', async () => {
  const dir = path.join(TEST_DATA, 'dev-server-start-broken');
  const { cli, runs } = flakyCli(dir, 100);
  await expect(start(dir, cli)).rejects.toThrow(/exited during start-up/);
  expect(runs()).toBe(3);
}, 60_000);
