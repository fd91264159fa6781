import fs from 'node:fs';
import { cpuMs } from './proc-stats';

/**
 * CPU time of the processes that share the machine during a benchmark phase, from
 * /proc/<pid>/stat (user + system, every thread). On 2 shared cores a change in throughput is
 * usually a change in CPU per request somewhere, and not always in the gateway's own
 * processes: this says in which one (the dev server, PostgreSQL's backends, ...).
 */
export type CpuGroups = Record<string, number>;

/** A process's CPU ms so far; 0 once it has gone (its time went with it). */
function pidCpuMs(pid: number): number {
  const ms = cpuMs(pid);
  return Number.isNaN(ms) ? 0 : ms;
}

/** The pids whose command name is `comm` (e.g. every PostgreSQL backend). */
function pidsNamed(comm: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === comm) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

/** CPU ms used so far by each group: named pids, plus every process of a command name. */
export function cpuSnapshot(pids: Record<string, number | undefined>, commands: Record<string, string>): CpuGroups {
  const out: CpuGroups = {};
  for (const [name, pid] of Object.entries(pids)) out[name] = pid ? pidCpuMs(pid) : NaN;
  for (const [name, comm] of Object.entries(commands)) out[name] = pidsNamed(comm).reduce((sum, pid) => sum + pidCpuMs(pid), 0);
  const self = process.cpuUsage();
  out.bench = (self.user + self.system) / 1000;
  return out;
}

/** CPU ms per item between two snapshots, per group. */
export function cpuPerItem(before: CpuGroups, after: CpuGroups, items: number): CpuGroups {
  return Object.fromEntries(Object.keys(after).map((k) => [k, ((after[k] ?? NaN) - (before[k] ?? NaN)) / items]));
}

export const formatCpu = (perItem: CpuGroups): string =>
  `${Object.entries(perItem)
    .map(([k, v]) => `${k} ${v.toFixed(2)}`)
    .join(', ')} (total ${Object.values(perItem)
    .reduce((a, b) => a + (Number.isNaN(b) ? 0 : b), 0)
    .toFixed(2)})`;
