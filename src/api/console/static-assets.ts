import fs from 'node:fs';
import path from 'node:path';
import type { Middleware } from 'koa';
import type { GatewayState } from '../context';
import { NotFoundError, ServiceUnavailableError } from '../errors';
import { decodeTarget } from '../middleware/request-target';

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

const notBuilt = () =>
  new ServiceUnavailableError('The console is not built: run `npm run build` (it writes dist/console), then reload.', 'console_not_built', 60);

/** Content-hashed file names never change content: cached for a year. */
const ASSET_CACHE = 'public, max-age=31536000, immutable';

/**
 * The file under `root` that an asset path names, or null when it could name anything else:
 * every segment is decoded and checked, so `..`, `%2e%2e`, a backslash, an empty segment or a
 * hidden file never leave (or probe) the folder. The resolved path is checked to stay inside
 * it as well, belt and braces.
 */
export function assetFile(root: string, rawRelative: string): string | null {
  const decoded = decodeTarget(rawRelative);
  if (decoded === null || decoded === '' || decoded.length > 300) return null;
  const segments = decoded.split('/');
  if (segments.some((s) => s === '' || s.startsWith('.') || s.includes('\\') || s.includes(':'))) return null;
  const base = path.resolve(root);
  const file = path.resolve(base, ...segments);
  return file.startsWith(base + path.sep) ? file : null;
}

/**
 * The console's single-page app from `dir` (dist/console, built by `npm run build`): GET
 * /console/assets/<file> with a year's immutable caching (404 when unknown), and every other
 * /console path but /console/api the app's index.html, never cached, so a deploy is seen at
 * the next load. A missing build is a 503 that says how to make it.
 */
export function consoleAssets(dir: string | undefined): Middleware<GatewayState> {
  const root = dir ? path.resolve(dir) : null;
  const assets = root ? path.join(root, 'assets') : null;
  return async (ctx, next) => {
    const p = ctx.path;
    if (p !== '/console' && !p.startsWith('/console/')) return next();
    if (p === '/console/api' || p.startsWith('/console/api/')) return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    if (!root || !assets) throw notBuilt();
    const index = path.join(root, 'index.html');
    if (p.startsWith('/console/assets/')) {
      const file = assetFile(assets, p.slice('/console/assets/'.length));
      const stat = file ? await fs.promises.stat(file).catch(() => null) : null;
      if (!file || !stat?.isFile()) {
        // An unknown asset of a built console is a 404; with no build at all, the 503 that says so.
        if (!(await fs.promises.stat(index).catch(() => null))) throw notBuilt();
        throw new NotFoundError(`No console asset '${p}'.`);
      }
      ctx.set('Cache-Control', ASSET_CACHE);
      ctx.type = CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
      ctx.length = stat.size;
      // HEAD: the headers only (Koa sends no body for HEAD; no file is opened for nothing).
      if (ctx.method === 'HEAD') ctx.status = 200;
      else ctx.body = fs.createReadStream(file);
      return;
    }
    // Any other path is a route of the app itself (client-side routing): its page.
    const html = await fs.promises.readFile(index).catch((err: NodeJS.ErrnoException) => {
      throw err.code === 'ENOENT' ? notBuilt() : err;
    });
    ctx.set('Cache-Control', 'no-cache');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = html;
  };
}
