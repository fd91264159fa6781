import { signInBody } from '../../console/session-routes';
import { requestSchema } from '../json-schema';
import { CONSOLE_SESSION, OPEN } from '../security';
import { errors, JSON_BODY_400, json } from '../responses';
import type { RouteDoc } from '../types';

/** The console's sign-in (console/session-routes.ts, docs/console.md). */
export function consoleRoutes(): RouteDoc[] {
  return [
    {
      method: 'post',
      path: '/console/api/session',
      operation: {
        operationId: 'createConsoleSession',
        summary: 'Sign in to the console with an API key or the admin token (sets the gw_session cookie)',
        description:
          'Sets `gw_session` (HttpOnly, SameSite=Strict, Path=/, Secure over HTTPS, no Max-Age). Wrong secrets count against the per-address limit of failed authentications.',
        tags: ['Console'],
        security: OPEN,
        requestBody: { required: true, description: 'At most 16 KiB.', content: { 'application/json': { schema: requestSchema(signInBody) } } },
        responses: {
          '201': json('The session.', 'ConsoleSession'),
          ...errors({
            400: `${JSON_BODY_400}, or not exactly one of api_key and admin_token.`,
            401: 'A wrong key or admin token.',
            429: 'Too many failed authentications from this address.',
          }),
        },
      },
    },
    {
      method: 'get',
      path: '/console/api/session',
      operation: {
        operationId: 'getConsoleSession',
        summary: 'The current session (its CSRF token again, for a reloaded page)',
        tags: ['Console'],
        security: CONSOLE_SESSION,
        responses: { '200': json('The session.', 'ConsoleSession'), ...errors({ 401: 'No session cookie, or the session ended (`session_expired`).' }) },
      },
    },
    {
      method: 'delete',
      path: '/console/api/session',
      operation: {
        operationId: 'deleteConsoleSession',
        summary: 'Sign out: deletes the session and clears the cookie (needs X-CSRF-Token)',
        tags: ['Console'],
        security: CONSOLE_SESSION,
        responses: {
          '200': json('Signed out.', 'ConsoleSessionDeleted'),
          ...errors({ 401: 'No live session.', 403: 'X-CSRF-Token missing or wrong, or a foreign Origin (`csrf_failed`).' }),
        },
      },
    },
  ];
}
