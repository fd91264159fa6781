/**
 * What a package.json script puts on the gateway's command line: the variables before `node`
 * and the node flags before the entry file (`MALLOC_ARENA_MAX=2 node --max-semi-space-size=8
 * dist/src/main.js`). Read by the benches, to run each process as its script does
 * (bench/script-command.ts), and by the image's test, which checks that the image runs the API
 * and the worker the same way.
 */
import { escapeRegExp } from '../../src/system/regexp';

/** The gateway's entry files, by the package.json script that runs each. */
export const GATEWAY_SCRIPTS = {
  start: 'dist/src/main.js',
  api: 'dist/src/api/server.js',
  worker: 'dist/src/worker.js',
} as const;

export type GatewayScript = keyof typeof GATEWAY_SCRIPTS;

export interface NodeCommand {
  env: Record<string, string>;
  nodeArgs: string[];
}

/** The command that runs `entry` in `script`, or null when the script does not run it. */
export function nodeCommandOf(script: string, entry: string): NodeCommand | null {
  const command = new RegExp(`(?:^|&&\\s*)((?:\\w+=\\S+\\s+)*)node((?:\\s+--\\S+)*)\\s+${escapeRegExp(entry)}(?:\\s|$)`).exec(script);
  if (!command) return null;
  return { env: assignments(words(command[1])), nodeArgs: words(command[2]) };
}

/** `KEY=value` words as a record (a value holds no spaces). */
export function assignments(pairs: readonly string[]): Record<string, string> {
  return Object.fromEntries(pairs.map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]));
}

export function words(text: string | undefined): string[] {
  return (text ?? '').trim().split(/\s+/).filter(Boolean);
}
