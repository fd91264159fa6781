/**
 * A compiled entry point in a process group of its own, as a terminal or a container runs
 * `npm start`: the group can then be signalled as a whole (Ctrl-C's SIGINT, the power cord's
 * SIGKILL), which reaches the gateway's children (the dev server, the store process) too.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, TEST_DATA } from './processes';

export interface GroupLeader {
  proc: ChildProcess;
  /** The leader's exit code (null when a signal ended it). */
  exited: Promise<number | null>;
  log: string;
}

export function startGroup(entry: string, env: Record<string, string>, logName: string): GroupLeader {
  const log = path.join(TEST_DATA, `${logName}.log`);
  fs.mkdirSync(TEST_DATA, { recursive: true });
  const fd = fs.openSync(log, 'a');
  const proc = spawn(process.execPath, [path.join(ROOT, entry)], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', fd, fd],
    detached: true,
  });
  fs.closeSync(fd);
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return { proc, exited, log };
}

/** Sends `signal` to every process of the group; a group already gone is no error. */
export function signalGroup(leader: GroupLeader, signal: NodeJS.Signals): void {
  try {
    process.kill(-leader.proc.pid!, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

/** SIGKILL to every process of the group: the power cord of a container, short of the kernel. */
export async function killGroup(leader: GroupLeader): Promise<void> {
  signalGroup(leader, 'SIGKILL');
  await leader.exited;
}
