import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

/** Process accounting for the benchmarks, from Linux /proc. */

export const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** utime + stime of a process, in ms (resolution 1000 / CLK_TCK ms). */
export function cpuMs(pid: number | undefined): number {
  if (!pid) return NaN;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

/** A field of /proc/<pid>/status in MiB (VmRSS, VmHWM). */
export function statusMiB(pid: number | undefined, field: string): number {
  if (!pid) return NaN;
  try {
    const line = fs
      .readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${field}:`));
    return Number(line?.replace(/\D+/g, '') ?? NaN) / 1024;
  } catch {
    return NaN;
  }
}

/** Busy CPU time of the whole machine (all cores), in ms, from /proc/stat. */
export function machineBusyMs(): number {
  try {
    const line = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    const [user, nice, system, , , irq, softirq] = line.trim().split(/\s+/).slice(1).map(Number);
    return (((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0)) * 1000) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

export const selfCpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

// Process trees: a target is measured with every process it runs.

/**
 * `root` and every process below it: the gateway and its store process, LiteLLM's uvicorn
 * supervisor with its workers and multiprocessing's resource tracker.
 */
export function treePids(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid ...: comm may hold spaces, so split after its closing parenthesis.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(entry));
      children.set(ppid, list);
    } catch {
      // exited meanwhile
    }
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    out.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** A process's command name (/proc/<pid>/comm): node, python3, litellm. */
export function commOf(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '?';
  }
}

/** CPU ms so far of each process of the tree (a process that has gone reads NaN and is dropped). */
export function treeCpu(pids: number[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const pid of pids) {
    const ms = cpuMs(pid);
    if (!Number.isNaN(ms)) out.set(pid, ms);
  }
  return out;
}

/** CPU the tree used between two readings; a process born meanwhile counts from 0. */
export function treeCpuDelta(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0;
  for (const [pid, ms] of after) sum += ms - (before.get(pid) ?? 0);
  return sum;
}

/**
 * Sum of a status field (VmRSS; VmHWM for each process's peak) over the tree, MiB. Workers
 * started with multiprocessing's spawn share little, so the sum is close to what the tree holds.
 */
export function treeRssMiB(pids: number[], field = 'VmRSS'): number {
  return pids.reduce((sum, pid) => {
    const v = statusMiB(pid, field);
    return Number.isNaN(v) ? sum : sum + v;
  }, 0);
}
