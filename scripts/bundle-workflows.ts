/**
 * Bundles the workflow code ahead of time so production workers start without webpack: the
 * plain bundle, and the traced one (the same workflows with Temporal's OpenTelemetry workflow
 * interceptors) that a worker runs when tracing is on. Skips a bundle whose inputs have not
 * changed since it was last written.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { tracedWorkflowBundlePath, workflowBundlePath } from '../src/config/paths';
import { WORKFLOW_TRACING_MODULE } from '../src/telemetry/temporal-tracing';

function sourcesHash(root: string, packages: string[]): string {
  const hash = createHash('sha256');
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.js')) hash.update(full).update(fs.readFileSync(full));
    }
  };
  walk(root);
  for (const pkg of packages) hash.update(fs.readFileSync(require.resolve(`${pkg}/package.json`)));
  return hash.digest('hex');
}

async function bundleOnce(out: string, interceptorModules: string[], hash: string, force: boolean): Promise<string> {
  const stamp = `${out}.sha256`;
  if (!force && fs.existsSync(out) && fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === hash) return out;
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../src/workflows'),
    workflowInterceptorModules: interceptorModules,
    logger: { log: () => undefined, trace: () => undefined, debug: () => undefined, info: () => undefined, warn: console.warn, error: console.error },
  });
  fs.writeFileSync(`${out}.tmp`, code);
  fs.renameSync(`${out}.tmp`, out);
  fs.writeFileSync(stamp, hash);
  console.log(`workflow bundle written: ${path.relative(process.cwd(), out)} (${Math.round(code.length / 1024)} KiB)`);
  return out;
}

/** Writes both bundles (when out of date); resolves with the plain one's path. */
export async function bundleWorkflows(force = false): Promise<string> {
  const srcRoot = path.resolve(__dirname, '../src');
  const plain = await bundleOnce(workflowBundlePath(), [], sourcesHash(srcRoot, ['@temporalio/workflow']), force);
  const tracedHash = sourcesHash(srcRoot, ['@temporalio/workflow', '@temporalio/interceptors-opentelemetry', '@opentelemetry/sdk-trace-base']);
  await bundleOnce(tracedWorkflowBundlePath(), [WORKFLOW_TRACING_MODULE], tracedHash, force);
  return plain;
}

if (require.main === module) {
  bundleWorkflows(process.argv.includes('--force')).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
