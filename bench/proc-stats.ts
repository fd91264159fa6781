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
