/**
 * How a checkout's package.json runs one of the gateway's processes (`start`, `api`, `worker`):
 * the variables before `node` and the node flags before the entry file. The benches run the
 * gateway's processes with them, so that they measure the processes users run (V8's young
 * generation and glibc's arenas change both CPU and memory), not node's defaults.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { runNode, type Child } from '../test/support/processes';
import { GATEWAY_SCRIPTS, nodeCommandOf, type GatewayScript, type NodeCommand } from '../test/support/start-scripts';

const packageScripts = z.object({ scripts: z.record(z.string(), z.string()).default({}) });

/**
 * The command of `script` in the package.json at `root`. A checkout whose script does not run
 * its entry with node (an older build under `--gateway` or `--against`) runs it with node's
 * defaults, as it did then; `required` makes that an error instead.
 */
export function scriptCommand(root: string, script: GatewayScript, required = false): NodeCommand {
  const entry = GATEWAY_SCRIPTS[script];
  const pkg = packageScripts.parse(JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')));
  const command = nodeCommandOf(pkg.scripts[script] ?? '', entry);
  if (command) return command;
  if (required) throw new Error(`${root}/package.json: the ${script} script does not run node ${entry}`);
  return { env: {}, nodeArgs: [] };
}

/**
 * Runs the checkout's `script` process as its package.json does, with `env` and `nodeArgs` (a
 * profile's) added; `entry` replaces the script's own entry for a bench floor that stands in for
 * it, so that the floor and the gateway run with the same flags.
 */
export function runScript(
  script: GatewayScript,
  env: Record<string, string>,
  logName: string,
  root: string,
  nodeArgs: string[] = [],
  entry: string = GATEWAY_SCRIPTS[script],
): Child {
  const command = scriptCommand(root, script);
  return runNode(entry, { ...command.env, ...env }, logName, root, [...command.nodeArgs, ...nodeArgs]);
}
