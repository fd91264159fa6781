import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../src/config/paths';

/** Resolved from the project root, so this works from test/ (ts-jest) and from dist/ (benchmarks). */
export const ROOT = projectRoot();
export const TEST_DATA = path.join(ROOT, '.test-data');

export interface Child {
  proc: ChildProcess;
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after graceMs. */
  stop(graceMs?: number): Promise<number | null>;
  kill(): Promise<number | null>;
}

/**
 * Runs a compiled entry point (dist/...) of the checkout at root (this one by default) with
 * env and node's own flags (--cpu-prof is not allowed in NODE_OPTIONS), its output appended
 * to .test-data/<logName>.log, or to logName itself when it is an absolute path (the
 * benchmarks: .test-data is wiped by the e2e tests' setup).
 */
export function runNode(entry: string, env: Record<string, string>, logName: string, root = ROOT, nodeArgs: string[] = []): Child {
  fs.mkdirSync(TEST_DATA, { recursive: true });
  const log = fs.openSync(path.isAbsolute(logName) ? logName : path.join(TEST_DATA, `${logName}.log`), 'a');
  const proc = spawn(process.execPath, [...nodeArgs, path.join(root, entry)], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', log, log],
  });
  fs.closeSync(log);
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))));
  const stop = async (graceMs = 10_000) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return exited;
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
    const code = await exited;
    clearTimeout(timer);
    return code;
  };
  const kill = async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    return exited;
  };
  return { proc, exited, stop, kill };
}

/** The pids of `pid`'s children whose command name is `comm`, read from /proc (what a human would look for). */
export function childPids(pid: number, comm: string): number[] {
  return fs
    .readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .flatMap((d) => {
      try {
        const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
        // pid (comm) state ppid ...: comm may hold spaces, so split after its closing parenthesis.
        const close = stat.lastIndexOf(')');
        const ppid = Number(stat.slice(close + 2).split(' ')[1]);
        return ppid === pid && stat.slice(stat.indexOf('(') + 1, close) === comm ? [Number(d)] : [];
      } catch {
        return []; // gone meanwhile
      }
    });
}
