/**
 * The layout's rules, read from the import lines of the source: the product never imports its
 * tools (simulator/, bench/, test/), except npm start's launcher, which loads the simulator into
 * its process for the demo when no provider credentials are configured; and the domain (tasks, billing, workflows, providers)
 * never imports the HTTP edge (src/api).
 */
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../src/config/paths';

const ROOT = projectRoot();

function tsFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    return e.isDirectory() ? tsFiles(full) : e.name.endsWith('.ts') ? [full] : [];
  });
}

/** Every relative module a file imports (static, dynamic or require), resolved from the project root. */
function importsOf(file: string): string[] {
  const source = fs.readFileSync(file, 'utf8');
  const specifiers = [...source.matchAll(/(?:from|import|require)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1]!);
  return specifiers.map((s) => path.relative(ROOT, path.resolve(path.dirname(file), s)));
}

const offending = (dirs: string[], forbidden: RegExp) =>
  dirs.flatMap((d) =>
    tsFiles(path.join(ROOT, d)).flatMap((f) =>
      importsOf(f)
        .filter((i) => forbidden.test(i))
        .map((i) => `${path.relative(ROOT, f)} -> ${i}`),
    ),
  );

test('src/ imports nothing from the simulator, the benchmarks or the tests, but for the demo launcher', () => {
  expect(offending(['src'], /^(simulator|bench|test)\//)).toEqual(['src/main.ts -> simulator/server']);
});

test('tasks, billing, workflows and providers do not import the HTTP edge', () => {
  expect(offending(['src/tasks', 'src/billing', 'src/workflows', 'src/providers'], /^src\/api\//)).toEqual([]);
});

test('the check sees imports at all (a file known to import the edge is caught)', () => {
  expect(importsOf(path.join(ROOT, 'src/api/app.ts'))).toContain('src/api/middleware/errors');
});
