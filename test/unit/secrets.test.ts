/** Generated secrets (admin token, link-signing key): kept whole across restarts, never empty. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { persistentSecret } from '../../src/config/secrets';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-secret-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

test('generated once, mode 0600, the same on the next start; a given one wins', () => {
  const first = persistentSecret(dir, 'admin-token', undefined);
  expect(first.created).toBe(true);
  expect(first.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect(fs.statSync(path.join(dir, 'admin-token')).mode & 0o777).toBe(0o600);
  expect(persistentSecret(dir, 'admin-token', undefined)).toEqual({ value: first.value, created: false });
  expect(persistentSecret(dir, 'admin-token', 'given')).toEqual({ value: 'given', created: false });
  expect(fs.readdirSync(dir)).toEqual(['admin-token']);
});

test('an empty file (a write cut by a power loss before this version) is replaced, never used as the secret', () => {
  fs.writeFileSync(path.join(dir, 'url-signing-secret'), '');
  const secret = persistentSecret(dir, 'url-signing-secret', undefined);
  expect(secret.created).toBe(true);
  expect(secret.value.length).toBeGreaterThan(40);
  expect(fs.readFileSync(path.join(dir, 'url-signing-secret'), 'utf8')).toBe(secret.value);
});
