/**
 * The metrics' documents cannot drift from the code: every gateway metric is described in
 * docs/operations.md, every metric the Grafana dashboard and the alert rules name is registered
 * (test/e2e/metrics.test.ts checks the Temporal SDK's against a live scrape), and every alert
 * rule has its runbook section.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { envSchema } from '../../src/config/env';
import { registry } from '../../src/metrics/metrics';
import { devServerArgs } from '../../src/temporal/dev-server';
import { metricNamesIn } from '../support/prometheus';

const ROOT = path.join(__dirname, '../..');
const read = (rel: string) => fs.readFileSync(path.join(ROOT, rel), 'utf8');
const operations = read('docs/operations.md');
const dashboard = JSON.parse(read('docs/grafana-dashboard.json')) as { panels: { title: string; targets: { expr: string }[] }[] };
const alerts = (parseYaml(read('docs/prometheus-alerts.yml')) as { groups: { rules: { alert: string; expr: string }[] }[] }).groups.flatMap((g) => g.rules);

const registered = async () => new Set((await registry.getMetricsAsJSON()).map((m) => m.name));
/** A histogram's series name (`_bucket`, `_sum`, `_count`) as its family's. */
const family = (name: string) => name.replace(/_(bucket|sum|count)$/, '');

test('every gateway metric is described in docs/operations.md', async () => {
  const section = operations.slice(operations.indexOf('## Metrics'), operations.indexOf('## Alerts'));
  const undocumented = [...(await registered())].filter((n) => n.startsWith('gateway_') && !section.includes(`\`${n}\``));
  expect(undocumented).toEqual([]);
});

test('every gateway and process metric the dashboard and the alert rules name is registered', async () => {
  const names = await registered();
  const exprs = [
    ...dashboard.panels.flatMap((p) => p.targets.map((t) => ({ where: `panel "${p.title}"`, expr: t.expr }))),
    ...alerts.map((a) => ({ where: `alert ${a.alert}`, expr: a.expr })),
  ];
  const unknown = exprs.flatMap(({ where, expr }) =>
    metricNamesIn(expr)
      .filter((n) => !n.startsWith('temporal_') && !names.has(family(n)))
      .map((n) => `${where}: ${n}`),
  );
  expect(exprs.length).toBeGreaterThan(20);
  expect(unknown).toEqual([]);
});

test('the name check sees a misspelt metric', () => {
  expect(metricNamesIn('sum by (route) (rate(gateway_http_request_total{status=~"5.."}[$__rate_interval]))')).toEqual(['gateway_http_request_total']);
  expect(metricNamesIn('histogram_quantile(0.99, sum by (le) (rate(gateway_task_completion_lag_seconds_bucket[5m]))) > 60')).toEqual([
    'gateway_task_completion_lag_seconds_bucket',
  ]);
});

test('every alert rule has its section in the runbook', () => {
  const section = operations.slice(operations.indexOf('## Alerts'), operations.indexOf('## Runbook'));
  expect(alerts.length).toBeGreaterThanOrEqual(8);
  expect(alerts.map((a) => a.alert).filter((name) => !section.includes(`### ${name}\n`))).toEqual([]);
});

test('metrics listener addresses are host:port', () => {
  const parse = (v: string) => envSchema.safeParse({ METRICS_ADDRESS: v }).success;
  expect(parse('0.0.0.0:9465')).toBe(true);
  expect(parse('[::1]:9465')).toBe(true);
  expect(parse('gateway-worker:9465')).toBe(true);
  expect(parse('9465')).toBe(false);
  expect(parse('0.0.0.0:70000')).toBe(false);
  expect(parse('http://0.0.0.0:9465')).toBe(false);
  expect(envSchema.parse({ METRICS_ADDRESS: '' }).METRICS_ADDRESS).toBeUndefined();
});

test("TEMPORAL_DEV_METRICS_PORT reaches the dev server's command line; 0 leaves it the dev server's random port", () => {
  const base = { dataDir: '/tmp/x', port: 7233, uiPort: 8233, namespace: 'default' };
  const args = devServerArgs({ ...base, metricsPort: 9090 });
  expect(args[args.indexOf('--metrics-port') + 1]).toBe('9090');
  expect(devServerArgs({ ...base, metricsPort: 0 })).not.toContain('--metrics-port');
  expect(envSchema.parse({}).TEMPORAL_DEV_METRICS_PORT).toBe(0);
});
