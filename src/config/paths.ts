import fs from 'node:fs';
import path from 'node:path';

/** The project root (the folder with this package's package.json), from src/ or dist/src/. */
export function projectRoot(): string {
  let dir = __dirname;
  for (;;) {
    const pkg = path.join(dir, 'package.json');
    if (fs.existsSync(pkg) && fs.readFileSync(pkg, 'utf8').includes('"durable-model-gateway"')) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('cannot find the project root');
    dir = parent;
  }
}

export const TEMPORAL_CLI_VERSION = '1.9.1';

export function temporalCliPath(override?: string): string {
  return override ?? path.join(projectRoot(), '.tools', 'temporal', 'bin', 'temporal');
}

export function workflowBundlePath(): string {
  return path.join(projectRoot(), 'dist', 'workflow-bundle.js');
}

/**
 * The same workflows with Temporal's OpenTelemetry workflow interceptors, which a worker runs
 * when tracing is on: a bundle of its own, so that a worker without tracing runs exactly the
 * code it ran before tracing existed.
 */
export function tracedWorkflowBundlePath(): string {
  return path.join(projectRoot(), 'dist', 'workflow-bundle-traced.js');
}
