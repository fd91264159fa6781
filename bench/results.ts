/**
 * Where every benchmark leaves its figures: bench-results/<name>-<time>.json under the project.
 * JSON has no NaN or Infinity: a figure that could not be measured is written as null.
 */
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../src/config/paths';

/** Writes the results and answers their path, relative to the project (for the closing line). */
export function writeBenchResults(name: string, results: unknown, at = new Date()): string {
  const root = projectRoot();
  const dir = path.join(root, 'bench-results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}-${at.toISOString().replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(file, JSON.stringify(results, null, 2));
  return path.relative(root, file);
}
