/**
 * What answered the API's status reads, from its own metrics (gateway_task_reads_total): the
 * task views in the store, a describe on the Temporal server, or a finished run the API cached.
 * Counts, so they stay steady where a shared machine's latencies move.
 */
import { parsePrometheus, sumOf } from '../test/support/prometheus';

export const READ_SOURCES = ['view', 'temporal', 'closed'] as const;
export type ReadSources = Record<(typeof READ_SOURCES)[number], number>;

/** The API's counts so far; null for a gateway built before the counter (--gateway). */
export async function readSources(apiUrl: string, adminToken: string): Promise<ReadSources | null> {
  try {
    const res = await fetch(`${apiUrl}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } });
    const text = await res.text();
    // Declared (HELP) before any read is counted; an older gateway does not declare it.
    if (!res.ok || !text.includes('# HELP gateway_task_reads_total')) return null;
    const samples = parsePrometheus(text);
    return Object.fromEntries(READ_SOURCES.map((source) => [source, sumOf(samples, 'gateway_task_reads_total', { source })])) as ReadSources;
  } catch {
    return null;
  }
}

export function readSourcesBetween(before: ReadSources | null, after: ReadSources | null): ReadSources | null {
  if (!before || !after) return null;
  return Object.fromEntries(READ_SOURCES.map((s) => [s, after[s] - before[s]])) as ReadSources;
}

export function formatReadSources(c: ReadSources): string {
  return `task views ${c.view}, Temporal describes ${c.temporal}, cached finished runs ${c.closed}`;
}
