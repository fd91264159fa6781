import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * A secret given in the environment, or else one generated on first start and kept in
 * the data directory (mode 0600), so the embedded default needs no set-up and links and
 * admin tokens survive restarts.
 */
export function persistentSecret(dataDir: string, name: string, given: string | undefined, bytes = 32): { value: string; created: boolean } {
  if (given) return { value: given, created: false };
  const file = path.join(dataDir, name);
  try {
    return { value: fs.readFileSync(file, 'utf8').trim(), created: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fs.mkdirSync(dataDir, { recursive: true });
  const value = randomBytes(bytes).toString('base64url');
  try {
    fs.writeFileSync(file, value, { mode: 0o600, flag: 'wx' });
    return { value, created: true };
  } catch (err) {
    // Another process won the race: use its secret.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return { value: fs.readFileSync(file, 'utf8').trim(), created: false };
    throw err;
  }
}
