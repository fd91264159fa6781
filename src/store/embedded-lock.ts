import fs from 'node:fs';
import path from 'node:path';
import { isProcessAlive } from '../system/processes';

/**
 * PGlite keeps its files in one directory and must have a single owner process; a lock file
 * turns a second opener (say `npm run api` and `npm run worker` both embedded) into a clear
 * error instead of a corrupted store. Scale-out deployments set DATABASE_URL.
 *
 * The file names its owner by pid and, on Linux, by that process's identity (boot id and
 * start time), because a lock left by a process killed with SIGKILL outlives it and its pid
 * is soon reused: in a container the restarted gateway's own children (the Temporal dev
 * server) get the same small pids. A lock whose pid is dead, or alive but another process
 * than the one that wrote it, is stale and taken over.
 */
export function acquireEmbeddedLock(lockFile: string): () => void {
  const me: LockOwner = { pid: process.pid, process: processIdentity(process.pid) };
  for (let attempt = 0; ; attempt++) {
    try {
      fs.writeFileSync(lockFile, JSON.stringify(me), { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 3) throw err;
    }
    const owner = readOwner(lockFile);
    if (owner && holdsLock(owner)) {
      throw new Error(
        `The embedded store at ${path.dirname(lockFile)} is in use by process ${owner.pid}. ` +
          'The embedded store serves one process; run the API and worker together with `npm start`, ' +
          'or set DATABASE_URL to share a PostgreSQL database.',
      );
    }
    // Stale: take it over.
    fs.rmSync(lockFile, { force: true });
  }
  return () => {
    // Only our own lock: never delete one another process took over meanwhile.
    if (readOwner(lockFile)?.pid === process.pid) fs.rmSync(lockFile, { force: true });
  };
}

interface LockOwner {
  pid: number;
  /** `<boot id>:<start time>` on Linux; absent where /proc is not available. */
  process?: string;
}

/** The owner named by the lock file; a bare pid is the format of earlier releases. */
function readOwner(lockFile: string): LockOwner | null {
  let text: string;
  try {
    text = fs.readFileSync(lockFile, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  if (/^\d+$/.test(text)) return { pid: Number(text) };
  try {
    const parsed = JSON.parse(text) as { pid?: unknown; process?: unknown };
    if (typeof parsed.pid === 'number' && Number.isInteger(parsed.pid) && parsed.pid > 0) {
      return { pid: parsed.pid, process: typeof parsed.process === 'string' ? parsed.process : undefined };
    }
  } catch {
    // unreadable: a torn write of a crashed owner
  }
  return null;
}

/** True when the process that wrote the lock is still running (this one included: no second open). */
function holdsLock(owner: LockOwner): boolean {
  // A bare pid equal to ours was written by an earlier process with our pid.
  if (owner.pid === process.pid && owner.process === undefined) return false;
  if (!isProcessAlive(owner.pid)) return false;
  if (owner.process === undefined) return true;
  const now = processIdentity(owner.pid);
  // Without /proc we cannot tell a reused pid from the owner: assume the owner.
  return now === undefined || now === owner.process;
}

/** Linux: the boot id and the process's start time (clock ticks since boot), which a reused pid does not share. */
function processIdentity(pid: number): string | undefined {
  try {
    const bootId = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start with field 3, the state;
    // the start time is field 22.
    const startTime = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    return startTime ? `${bootId}:${startTime}` : undefined;
  } catch {
    return undefined;
  }
}
