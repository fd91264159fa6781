import type { Middleware } from 'koa';
import type { GatewayState } from '../context';

/** True for /console and everything under it: what the console's headers cover. */
export const isConsolePath = (path: string): boolean => path === '/console' || path.startsWith('/console/');

/**
 * The console's Content-Security-Policy: scripts, styles and fonts from the gateway only (no
 * inline code, no eval), media also from PUBLIC_BASE_URL (where video links point) and blob:
 * (previews of picked files), no framing, no plugins, no base or form elsewhere.
 */
export function consoleCsp(publicOrigin: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src 'self' data: blob: ${publicOrigin}`,
    `media-src 'self' blob: ${publicOrigin}`,
    "connect-src 'self'",
    "font-src 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

/** The security headers of every /console response (pages, assets, the session API, errors). */
export function consoleSecurityHeaders(publicOrigin: string): Middleware<GatewayState> {
  const headers: Record<string, string> = {
    'Content-Security-Policy': consoleCsp(publicOrigin),
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'X-Frame-Options': 'DENY',
    'Cross-Origin-Opener-Policy': 'same-origin',
  };
  return (ctx, next) => {
    // Set before the route runs, so an error answer carries them too.
    if (isConsolePath(ctx.path)) ctx.set(headers);
    return next();
  };
}
