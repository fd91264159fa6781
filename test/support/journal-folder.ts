import fs from 'node:fs';
import { afterEach, beforeEach } from '@jest/globals';
import os from 'node:os';
import path from 'node:path';
import { completeLines } from '../../src/billing/settlement-journal';

/**
 * A new folder for a settlement journal before each test (removed after it), and the lines of
 * its journal files: for the tests of the journal and of what writes through it.
 */
export function journalFolder(prefix: string): { readonly dir: string; lines(): string[] } {
  let dir = '';
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return {
    get dir() {
      return dir;
    },
    lines: () => journalLines(dir),
  };
}

/** The whole lines of the journal files in `dir`, each process's files in the order they were written. */
export function journalLines(dir: string): string[] {
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .map((f) => ({ f, owner: f.slice(0, f.lastIndexOf('-')), n: Number(f.slice(f.lastIndexOf('-') + 1, -'.jsonl'.length)) }))
    .sort((a, b) => (a.owner === b.owner ? a.n - b.n : a.owner < b.owner ? -1 : 1))
    .map(({ f }) => f)
    .flatMap((f) => completeLines(fs.readFileSync(path.join(dir, f), 'utf8')));
}
