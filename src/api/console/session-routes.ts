import Router from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { z } from 'zod';
import type { ConsoleSession } from '../../store/console-sessions';
import type { GatewayState } from '../context';
import { GatewayError } from '../errors';
import { guardedSecretCheck, secretMatcher } from '../middleware/admin-auth';
import { resolveKey } from '../middleware/auth';
import { jsonBody } from '../middleware/json-body';
import { parseOrThrow } from '../schemas/zod-error';
import { clearedSessionCookie, isHttpsRequest, sessionCookie, sessionIdOf } from './cookie';
import { cookieSession, SessionExpiredError, type ConsoleAuth } from './cookie-auth';

/** POST /console/api/session: a key holder signs in with an API key, an operator with the admin token. */
export const signInBody = z.union([z.strictObject({ api_key: z.string().min(1).max(500) }), z.strictObject({ admin_token: z.string().min(1).max(500) })]);

export interface SessionRouteDeps {
  consoleAuth: ConsoleAuth;
  adminToken: string;
  /** Base of the Temporal Web UI, shown to operators; null = none. */
  temporalUiUrl: string | null;
}

/**
 * The console's sign-in (docs/console.md): POST creates a session and sets its cookie, GET
 * answers the session again (a reloaded page gets its CSRF token back), DELETE signs out. A
 * wrong secret counts against the caller's address like a bad bearer key.
 */
export function sessionRoutes({ consoleAuth, adminToken, temporalUiUrl }: SessionRouteDeps): Router<GatewayState> {
  const router = new Router<GatewayState>({ prefix: '/console/api' });
  const isAdminToken = secretMatcher([adminToken]);

  async function view(session: ConsoleSession) {
    const key = session.keyId === null ? null : await consoleAuth.keys.get(session.keyId);
    if (session.role === 'key' && (!key || key.revokedAt !== null)) throw new SessionExpiredError();
    return {
      object: 'console.session',
      role: session.role,
      key: key && session.role === 'key' ? { id: key.id, name: key.name, key_hint: key.keyHint } : null,
      csrf_token: session.csrfToken,
      expires_at: session.expiresAt,
      temporal_ui_url: session.role === 'admin' ? temporalUiUrl : null,
    };
  }

  /** The admin token, behind the same per-address limit of failures as keys. */
  async function checkAdminToken(ctx: ParameterizedContext<GatewayState>, token: string): Promise<void> {
    if (await guardedSecretCheck(ctx, isAdminToken, token)) return;
    throw new GatewayError(401, 'invalid_request_error', 'Incorrect admin token.', 'admin_token', 'invalid_admin_token');
  }

  router.post('/session', jsonBody(16 * 1024), async (ctx) => {
    const body = parseOrThrow(signInBody, ctx.request.body);
    let created: Awaited<ReturnType<typeof consoleAuth.sessions.create>>;
    if ('api_key' in body) {
      const key = await resolveKey(consoleAuth.keys, body.api_key, ctx);
      created = await consoleAuth.sessions.create('key', key.id);
      ctx.state.log.info({ keyId: key.id }, 'console sign-in');
    } else {
      await checkAdminToken(ctx, body.admin_token);
      created = await consoleAuth.sessions.create('admin', null);
      ctx.state.log.info('console operator sign-in');
    }
    ctx.append('Set-Cookie', sessionCookie(created.id, isHttpsRequest(ctx, consoleAuth.trustProxy)));
    ctx.set('Cache-Control', 'no-store');
    ctx.status = 201;
    ctx.body = await view(created.session);
  });

  router.get('/session', async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    const session = await cookieSession(ctx, consoleAuth).catch((err: unknown) => {
      if (err instanceof SessionExpiredError) ctx.append('Set-Cookie', clearedSessionCookie(isHttpsRequest(ctx, consoleAuth.trustProxy)));
      throw err;
    });
    if (!session) throw new SessionExpiredError();
    ctx.body = await view(session);
  });

  router.delete('/session', async (ctx) => {
    const session = await cookieSession(ctx, consoleAuth);
    if (!session) throw new SessionExpiredError();
    const id = sessionIdOf(ctx.get('cookie')) ?? '';
    await consoleAuth.sessions.delete(id);
    ctx.append('Set-Cookie', clearedSessionCookie(isHttpsRequest(ctx, consoleAuth.trustProxy)));
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { object: 'console.session.deleted', deleted: true };
  });

  return router;
}
