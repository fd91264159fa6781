import type { ParameterizedContext } from 'koa';
import type { GatewayState } from '../context';

/** The console's session cookie (docs/console.md). */
export const SESSION_COOKIE = 'gw_session';

/**
 * Whether the browser reached the gateway over HTTPS: the socket itself (the app runs with
 * proxy: false), or, with TRUST_PROXY, the X-Forwarded-Proto the reverse proxy in front set.
 */
export function isHttpsRequest(ctx: ParameterizedContext<GatewayState>, trustProxy: boolean): boolean {
  if (ctx.secure) return true;
  if (!trustProxy) return false;
  // A chain of proxies lists one value each; the first is what the client used.
  const proto = ctx.get('x-forwarded-proto').split(',')[0]?.trim().toLowerCase();
  return proto === 'https';
}

/**
 * The session cookie: HttpOnly (no script reads it), SameSite=Strict (no other site's page
 * sends it), Path=/ (the console calls /v1, /motion/v1 and /admin), Secure over HTTPS, and no
 * Max-Age: it lasts the browser session; the server ends it sooner (idle and absolute limits).
 */
export function sessionCookie(id: string, secure: boolean): string {
  return `${SESSION_COOKIE}=${id}; Path=/; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

/** Tells the browser to drop the cookie. */
export function clearedSessionCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

/** The session id the request's Cookie header carries, or null. Parsed by hand: one name, no decoding needed (base64url). */
export function sessionIdOf(cookieHeader: string): string | null {
  if (cookieHeader === '') return null;
  for (const part of cookieHeader.split(';')) {
    const at = part.indexOf('=');
    if (at < 0 || part.slice(0, at).trim() !== SESSION_COOKIE) continue;
    const value = part.slice(at + 1).trim();
    return /^[A-Za-z0-9_-]{1,100}$/.test(value) ? value : null;
  }
  return null;
}
