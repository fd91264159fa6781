import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';

/**
 * Debian's chromium, driven headless. Playwright's own browser download needs the internet
 * (and a browser build per Playwright release); the distribution's package needs neither.
 * --no-sandbox: the sandbox cannot start as root (CI, containers).
 */
export const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'];

export const CHROMIUM_INSTALL_HINT =
  'Install it with `node scripts/setup.mjs --browser` (as root on Debian/Ubuntu: apt-get install chromium), or pass --chromium <path to a chromium binary>.';

export class BrowserMissingError extends Error {}

/** The chromium to drive: the given path, or `chromium` on PATH (/usr/bin/chromium on Debian). */
export function findChromium(explicit?: string): string {
  if (explicit) {
    if (!isExecutable(explicit)) throw new BrowserMissingError(`chromium not found at ${explicit}. ${CHROMIUM_INSTALL_HINT}`);
    return explicit;
  }
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, 'chromium');
    if (isExecutable(candidate)) return candidate;
  }
  throw new BrowserMissingError(`chromium is not installed (no \`chromium\` on PATH). ${CHROMIUM_INSTALL_HINT}`);
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

export async function launchChromium(executablePath: string): Promise<Browser> {
  try {
    return await chromium.launch({ executablePath, headless: true, args: CHROMIUM_FLAGS });
  } catch (err) {
    throw new BrowserMissingError(
      `chromium at ${executablePath} did not start: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}. ${CHROMIUM_INSTALL_HINT}`,
    );
  }
}
