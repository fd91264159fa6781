/**
 * Bundles the workflow code ahead of time so production workers start without webpack.
 * Skips the work when the compiled workflow sources have not changed since the last bundle.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { workflowBundlePath } from '../src/config/paths';

function sourcesHash(root: string): string {
  const hash = createHash('sha256');
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.js')) hash.update(full).update(fs.readFileSync(full));
    }
  };
  walk(root);
  hash.update(fs.readFileSync(require.resolve('@temporalio/workflow/package.json')));
  return hash.digest('hex');
}

export async function bundleWorkflows(force = false): Promise<string> {
  const out = workflowBundlePath();
  const srcRoot = path.resolve(__dirname, '../src');
  const hash = sourcesHash(srcRoot);
  const stamp = `${out}.sha256`;
  if (!force && fs.existsSync(out) && fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === hash) return out;
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../src/workflows'),
    logger: { log: () => undefined, trace: () => undefined, debug: () => undefined, info: () => undefined, warn: console.warn, error: console.error },
  });
  fs.writeFileSync(`${out}.tmp`, code);
  fs.renameSync(`${out}.tmp`, out);
  fs.writeFileSync(stamp, hash);
  console.log(`workflow bundle written: ${path.relative(process.cwd(), out)} (${Math.round(code.length / 1024)} KiB)`);
  return out;
}

if (require.main === module) {
  bundleWorkflows(process.argv.includes('--force')).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
