/**
 * The benches run the gateway's processes as the checkout's package.json scripts do (their
 * variables and node flags), so that they measure what users run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { runScript, scriptCommand } from '../../bench/script-command';
import { GATEWAY_SCRIPTS, type GatewayScript } from '../support/start-scripts';
import { ROOT } from '../support/processes';

const API_SCRIPT = 'node scripts/setup.mjs --build && MALLOC_ARENA_MAX=2 node --max-semi-space-size=8 dist/src/api/server.js';

const made: string[] = [];
afterAll(() => made.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

function checkout(scripts: Record<string, string>, files: Record<string, string> = {}): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'script-command-'));
  made.push(root);
  fs.writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'x', scripts }));
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(root, name), text);
  return root;
}

describe('scriptCommand', () => {
  it("reads the variables and node flags of the script's node command", () => {
    expect(scriptCommand(checkout({ api: API_SCRIPT }), 'api')).toEqual({ env: { MALLOC_ARENA_MAX: '2' }, nodeArgs: ['--max-semi-space-size=8'] });
  });

  it("runs with node's defaults a checkout whose script does not run its entry, unless the command is required", () => {
    const old = checkout({ api: 'node dist/src/api/other.js' });
    expect(scriptCommand(old, 'api')).toEqual({ env: {}, nodeArgs: [] });
    expect(scriptCommand(old, 'worker')).toEqual({ env: {}, nodeArgs: [] });
    expect(() => scriptCommand(old, 'api', true)).toThrow('the api script does not run node dist/src/api/server.js');
  });

  it("finds every gateway process's command in this checkout's package.json", () => {
    for (const script of Object.keys(GATEWAY_SCRIPTS) as GatewayScript[]) expect(() => scriptCommand(ROOT, script, true)).not.toThrow();
  });
});

describe('runScript', () => {
  it("starts the process with the script's variables and flags, the bench's added after them", async () => {
    // A floor standing in for the API: its own entry, the API script's flags.
    const root = checkout(
      { api: API_SCRIPT },
      { 'probe.js': 'console.log(JSON.stringify({ execArgv: process.execArgv, arenas: process.env.MALLOC_ARENA_MAX, port: process.env.PORT }));' },
    );
    const log = path.join(root, 'probe.log');
    const child = runScript('api', { PORT: '1234' }, log, root, ['--no-warnings'], 'probe.js');
    expect(await child.exited).toBe(0);
    const seen = z.object({ execArgv: z.array(z.string()), arenas: z.string(), port: z.string() }).parse(JSON.parse(fs.readFileSync(log, 'utf8')));
    expect(seen).toEqual({ execArgv: ['--max-semi-space-size=8', '--no-warnings'], arenas: '2', port: '1234' });
  });
});
