/**
 * One partition per task queue, in both Temporals the project starts: the embedded dev server
 * and the compose file's server. With Temporal's default four, a workflow task retried after a
 * timeout waited minutes for a poller (docs/deployment.md, docs/benchmarks.md).
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { devServerArgs } from '../../src/temporal/dev-server';

const KEYS = ['matching.numTaskqueueReadPartitions', 'matching.numTaskqueueWritePartitions'];

test('the embedded dev server starts with one read and one write partition per task queue', () => {
  const args = devServerArgs({ dataDir: '/tmp/x', port: 7233, uiPort: 8233, namespace: 'default' });
  const values = args.flatMap((arg, i) => (arg === '--dynamic-config-value' ? [args[i + 1]] : []));
  for (const key of KEYS) expect(values).toContain(`${key}=1`);
});

test("the compose file's Temporal dynamic config sets one read and one write partition", () => {
  const compose = parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'docker-compose.yml'), 'utf8')) as {
    configs: Record<string, { content: string }>;
  };
  const dynamic = parse(compose.configs['temporal-dynamic-config']!.content) as Record<string, { value: unknown; constraints: unknown }[]>;
  for (const key of KEYS) expect(dynamic[key]).toEqual([{ value: 1, constraints: {} }]);
});
