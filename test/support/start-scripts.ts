/**
 * What a package.json script puts on the gateway's command line: the variables before `node`
 * and the node flags before the entry file (`MALLOC_ARENA_MAX=2 node --max-semi-space-size=8
 * dist/src/main.js`). Read by bench:memory, to run the process as `npm start` does, and by the
 * image's test, which checks that the image runs it the same way.
 */
import { escapeRegExp } from '../../src/system/regexp';

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
