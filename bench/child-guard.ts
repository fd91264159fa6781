import type { Child } from '../test/support/processes';

/**
 * A benchmark's children stop with it: Ctrl-C or SIGTERM runs `cleanup` (which stops them) and
 * exits, and any child still running at exit (an uncaught throw in a callback) is killed.
 */
export function guardChildren(children: readonly Child[], cleanup: () => Promise<void>, what: string): void {
  const onSignal = (signal: NodeJS.Signals) => {
    console.error(`\n${signal}: stopping ${what}`);
    void cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  process.once('exit', () => {
    for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
  });
}
