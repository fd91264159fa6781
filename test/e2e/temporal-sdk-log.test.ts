/**
 * The Temporal core's own warnings reach the gateway's JSON log, with the SDK's other lines
 * (src/temporal/runtime.ts), rather than stderr as plain text outside its levels: a worker
 * process whose activity completes after its workflow was terminated makes the core warn.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { ROOT } from '../support/processes';
import { e2eEnv } from '../support/stack';

test("the core's warning is a JSON line of the log, at warning level; nothing is written around the logger", async () => {
  const child = spawn(process.execPath, [path.join(ROOT, 'dist/test/support/core-warning-child.js'), e2eEnv().temporalAddress], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(stderr).toBe('');
  expect(code).toBe(0);
  const lines = stdout.split('\n').filter((l) => l !== '');
  expect(lines.filter((l) => !l.startsWith('{'))).toEqual([]);
  const warnings = lines
    .map((l) => JSON.parse(l) as { level: number; component?: string; msg: string })
    .filter((l) => /Activity not found on completion/.test(l.msg));
  expect(warnings).toEqual([expect.objectContaining({ level: 40, component: 'temporal-sdk' })]);
}, 120_000);
