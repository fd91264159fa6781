import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { fsyncPath } from '../system/fsync';
import path from 'node:path';

/**
 * A secret given in the environment, or else one generated on first start and kept in
 * the data directory (mode 0600), so the embedded default needs no set-up and links and
 * admin tokens survive restarts. The file is written whole and fsynced before it is linked
 * into place: a power loss leaves either no secret or the whole one, never an empty file
 * (which would mean an empty signing key). An empty file found anyway is replaced.
 */
export function persistentSecret(dataDir: string, name: string, given: string | undefined, bytes = 32): { value: string; created: boolean } {
  if (given) return { value: given, created: false };
  const file = path.join(dataDir, name);
  const existing = readSecret(file);
  if (existing) return { value: existing, created: false };
  fs.mkdirSync(dataDir, { recursive: true });
  const value = randomBytes(bytes).toString('base64url');
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  const fd = fs.openSync(tmp, 'wx', 0o600);
  try {
    fs.writeSync(fd, value);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    if (existing === '') fs.rmSync(file, { force: true });
    // link fails when another process won the race: then its secret is the one.
    fs.linkSync(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return { value: readSecret(file) ?? value, created: false };
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  fsyncPath(dataDir);
  return { value, created: true };
}

/** The secret in the file; '' for an empty file, null when there is none. */
function readSecret(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}
