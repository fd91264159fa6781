/** One sample of Prometheus' text exposition format. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a /metrics page (comments and blank lines skipped). */
export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/.exec(line);
    if (!m) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_all, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** The sum of the samples named `name` whose labels include `where` (0 when there are none). */
export function sumOf(samples: readonly Sample[], name: string, where: Record<string, string> = {}): number {
  return samples.filter((s) => s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0);
}

/** Metric families on the page: sample names, with a histogram's _bucket/_sum/_count also under its own name. */
export function familiesOf(samples: readonly Sample[]): Set<string> {
  const names = new Set<string>();
  for (const s of samples) {
    names.add(s.name);
    const base = /^(.*)_(bucket|sum|count)$/.exec(s.name)?.[1];
    if (base) names.add(base);
  }
  return names;
}

export async function scrape(url: string, token?: string): Promise<Sample[]> {
  const res = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${await res.text()}`);
  return parsePrometheus(await res.text());
}

/** The metric names a PromQL expression uses (identifiers followed by `{`, `[`, `)` or a space, that are not functions or keywords). */
export function metricNamesIn(expr: string): string[] {
  // Label matchers, strings and Grafana's variables ($__rate_interval) name no metric.
  const withoutLabels = expr
    .replace(/\{[^}]*\}/g, '{}')
    .replace(/"[^"]*"/g, '""')
    .replace(/\$\{?\w+\}?/g, '');
  const words = [...withoutLabels.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()/g)].map((m) => m[1]!);
  const keywords = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset', 'le', 'inf', 'nan']);
  const labelsInBy = new Set([...withoutLabels.matchAll(/\b(?:by|without|on|ignoring)\s*\(([^)]*)\)/g)].flatMap((m) => m[1]!.split(',').map((s) => s.trim())));
  return [...new Set(words.filter((w) => !keywords.has(w.toLowerCase()) && !labelsInBy.has(w) && !/^\d/.test(w) && /_/.test(w)))];
}
