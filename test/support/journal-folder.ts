import fs from 'node:fs';
import { afterEach, beforeEach } from '@jest/globals';
import os from 'node:os';
import path from 'node:path';

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
    lines: () =>
      fs
        .readdirSync(dir)
        .filter((f) => f.endsWith('.jsonl'))
        .flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean)),
  };
}
