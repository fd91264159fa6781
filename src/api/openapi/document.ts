import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../config/paths';
import { componentSchemas } from './components';
import { SECURITY_SCHEMES } from './security';
import type { OpenApiDocument, RouteDoc } from './types';
import { adminRoutes } from './paths/admin';
import { billingRoutes } from './paths/billing';
import { characterRoutes } from './paths/characters';
import { consoleRoutes } from './paths/console';
import { chatCompletionRoutes } from './paths/chat-completions';
import { fileRoutes } from './paths/files';
import { healthRoutes } from './paths/health';
import { messagesRoutes } from './paths/messages';
import { modelRoutes } from './paths/models';
import { responsesRoutes } from './paths/responses';
import { videoObjectRoutes } from './paths/video-objects';
import { videoTaskRoutes } from './paths/video-tasks';
import { webhookRoutes } from './paths/webhooks';

/** Every route the app mounts (app.ts), one entry each; a route mounted without one fails test/unit/openapi.test.ts. */
export function routeDocs(): RouteDoc[] {
  return [
    ...healthRoutes(),
    ...fileRoutes(),
    ...videoTaskRoutes(),
    ...videoObjectRoutes(),
    ...chatCompletionRoutes(),
    ...responsesRoutes(),
    ...characterRoutes(),
    ...messagesRoutes(),
    ...modelRoutes(),
    ...billingRoutes(),
    ...adminRoutes(),
    ...webhookRoutes(),
    ...consoleRoutes(),
  ];
}

const TAGS = [
  { name: 'Video tasks', description: 'The JSON video family, /v1/video/* (spec 4.1, 4.2).' },
  { name: 'Videos', description: 'The OpenAI-style /v1/videos family (spec 4.3-4.7).' },
  { name: 'Characters', description: 'Characters of the motion models (spec 4.8).' },
  { name: 'Chat', description: 'Chat completions: text models proxied, motion models as video tasks.' },
  { name: 'Responses', description: "OpenAI's Responses API: the responses-only models, and the models an openai-responses channel lists." },
  { name: 'Messages', description: "The native messages format of the cm models; errors in Anthropic's shape." },
  { name: 'Models', description: 'The model catalog.' },
  { name: 'Console', description: 'Sign-in of the web console (/console); its session cookie authenticates the key and admin routes (docs/console.md).' },
  { name: 'Billing', description: "A key's own balance and ledger." },
  { name: 'Files', description: 'Signed links to stored videos and pictures.' },
  { name: 'Webhooks', description: 'A key\'s completion-webhook events and their delivery attempts (README "Completion webhooks").' },
  { name: 'Admin', description: 'Keys, quotas, ledgers, usage and channels, behind ADMIN_TOKEN.' },
  { name: 'Health', description: 'Probes and this document; no key.' },
];

const DESCRIPTION = [
  'Durable video tasks on Temporal, a native messages proxy, OpenAI-style chat completions and unified billing. The prose reference is docs/api.md.',
  '',
  'Schemas come from the zod schemas the routes validate with. Rules JSON Schema cannot state (per-model parameters, refinements such as "exactly one of") are in the operation descriptions; a request that breaks them is a 400 naming the parameter.',
  '',
  'On every route: a path or query string that does not decode as UTF-8 percent-encoding is a 400 `invalid_url`; an unexpected failure is a 500 whose message quotes the request id; the HTTP server answers 431 to oversized headers and 408 to headers sent too slowly. Every answer carries `x-request-id`.',
].join('\n');

/** The version of package.json: the document names the build it describes. */
function packageVersion(): string {
  const pkg = JSON.parse(fs.readFileSync(path.join(projectRoot(), 'package.json'), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
}

/** The OpenAPI 3.1 document of the public API, for a gateway reached at `serverUrl`. */
export function buildOpenApiDocument(serverUrl: string): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = {};
  for (const route of routeDocs()) {
    const item = (paths[route.path] ??= {});
    if (item[route.method]) throw new Error(`OpenAPI: ${route.method.toUpperCase()} ${route.path} is described twice`);
    item[route.method] = route.operation;
  }
  return {
    openapi: '3.1.1',
    info: { title: 'Durable model gateway', version: packageVersion(), description: DESCRIPTION },
    servers: [{ url: serverUrl, description: 'This gateway (PUBLIC_BASE_URL).' }],
    tags: TAGS,
    paths,
    components: { schemas: componentSchemas(), securitySchemes: SECURITY_SCHEMES },
  };
}
