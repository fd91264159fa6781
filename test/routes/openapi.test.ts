/**
 * The OpenAPI document against the app it describes, in process: every route the app mounts is
 * in it and nothing else; bodies the routes refuse, its schemas refuse too (they are the same
 * zod schemas); and what the routes answer (status, media type, JSON body) is what it says.
 */
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import type Router from '@koa/router';
import { startSimulator, type RunningSimulator } from '../../simulator/server';
import { buildOpenApiDocument } from '../../src/api/openapi/document';
import type { HttpMethod, OpenApiDocument } from '../../src/api/openapi/types';
import { ADMIN_TOKEN, startRouteApp, type RouteApp } from './harness';

const BASE_URL = 'https://gateway.example.test';

let app: RouteApp;
let sim: RunningSimulator;
let doc: OpenApiDocument;
let ajv: Ajv2020;
let key: string;
let keyId: string;

beforeAll(async () => {
  // The demo channels (no channels file) point at the provider simulator: the text routes answer for real.
  sim = await startSimulator({ jobMs: 100 });
  app = await startRouteApp({ PUBLIC_BASE_URL: BASE_URL, SIMULATOR_URL: sim.url, STREAM_POLL_MS: '50' });
  key = await app.issueKey();
  doc = (await (await fetch(`${app.url}/openapi.json`)).json()) as OpenApiDocument;
  // Formats (uri) are not checked: zod's URL rules are stricter than the format, and the routes judge them.
  ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema(doc, 'openapi.json');
  keyId = ((await (await fetch(`${app.url}/v1/billing`, { headers: bearer(key) })).json()) as { key_id: string }).key_id;
}, 60_000);

afterAll(async () => {
  await app?.close();
  await sim?.close();
});

const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
const jsonHeaders = (headers: Record<string, string>) => ({ ...headers, 'content-type': 'application/json' });

const compiled = new Map<string, ValidateFunction>();

/** The validator of the schema at a place in the document (JSON pointer segments, unescaped). */
function schemaAt(...segments: string[]): ValidateFunction {
  const pointer = segments.map((s) => s.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
  let validate = compiled.get(pointer);
  if (!validate) {
    validate = ajv.compile({ $ref: `openapi.json#/${pointer}` });
    compiled.set(pointer, validate);
  }
  return validate;
}

function requestBodySchema(method: HttpMethod, template: string, mediaType = 'application/json'): ValidateFunction {
  return schemaAt('paths', template, method, 'requestBody', 'content', mediaType, 'schema');
}

interface Answer {
  status: number;
  type: string;
  headers: Headers;
  body: unknown;
}

/**
 * Calls the app, then fails unless the document lists the answer's status for the route and
 * its media type, and the JSON body matches that response's schema.
 */
async function documented(method: HttpMethod, template: string, url: string, init: RequestInit = {}): Promise<Answer> {
  const res = await fetch(`${app.url}${url}`, { ...init, method: method.toUpperCase() });
  const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
  const raw = Buffer.from(await res.arrayBuffer());
  const body: unknown = type === 'application/json' ? JSON.parse(raw.toString('utf8')) : raw;
  const where = `${method.toUpperCase()} ${url} (${template})`;
  const operation = doc.paths[template]?.[method];
  if (!operation) throw new Error(`${where}: the route is not in the document`);
  const response = operation.responses[String(res.status)];
  if (!response) {
    throw new Error(
      `${where} answered ${res.status}; the document lists ${Object.keys(operation.responses).join(', ')}. Body: ${raw.toString('utf8').slice(0, 300)}`,
    );
  }
  if (!response.content?.[type])
    throw new Error(`${where} answered ${res.status} as ${type}; the document says ${Object.keys(response.content ?? {}).join(', ')}`);
  if (type === 'application/json') {
    const validate = schemaAt('paths', template, method, 'responses', String(res.status), 'content', type, 'schema');
    if (!validate(body)) {
      throw new Error(
        `${where} answered ${res.status} with a body the document does not describe: ${ajv.errorsText(validate.errors)}\n${raw.toString('utf8').slice(0, 600)}`,
      );
    }
  }
  return { status: res.status, type, headers: res.headers, body };
}

/** The `data:` payloads of a Server-Sent Events body. */
function dataEvents(body: Buffer): string[] {
  return body
    .toString('utf8')
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => line.slice('data: '.length));
}

describe('GET /openapi.json', () => {
  test('is served without a key, as JSON, naming PUBLIC_BASE_URL, the same bytes every time', async () => {
    const first = await fetch(`${app.url}/openapi.json`);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toMatch(/^application\/json/);
    expect(first.headers.get('cache-control')).toBe('public, max-age=300');
    const text = await first.text();
    expect(JSON.parse(text)).toEqual(buildOpenApiDocument(BASE_URL));
    expect(await (await fetch(`${app.url}/openapi.json`)).text()).toBe(text);
    await documented('get', '/openapi.json', '/openapi.json');
  });
});

/** Every method and path the app's routers mount, in OpenAPI's form (`:id` and `*path` as `{id}`, `{path}`). */
function mountedRoutes(): string[] {
  const out = new Set<string>();
  for (const middleware of app.app.middleware) {
    const router = (middleware as { router?: Router }).router;
    if (!router) continue;
    for (const layer of router.stack) {
      // Layers without methods are router.use() middleware (authentication), not routes; HEAD comes with every GET.
      for (const method of layer.methods.filter((m) => m !== 'HEAD')) {
        out.add(`${method} ${String(layer.path).replace(/[:*](\w+)/g, '{$1}')}`);
      }
    }
  }
  return [...out].sort();
}

function documentedRoutes(): string[] {
  return Object.entries(doc.paths)
    .flatMap(([p, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${p}`))
    .sort();
}

test('every route the app mounts is in the document, and every route in it is mounted', () => {
  const mounted = mountedRoutes();
  const inDocument = documentedRoutes();
  // The walk sees the routers at all: a route of each family.
  expect(mounted).toEqual(
    expect.arrayContaining(['GET /livez', 'POST /admin/keys', 'POST /v1/videos', 'POST /v1/messages', 'GET /files/{path}', 'GET /motion/v1/characters/{id}']),
  );
  const undocumented = mounted.filter((r) => !inDocument.includes(r));
  const unmounted = inDocument.filter((r) => !mounted.includes(r));
  if (undocumented.length > 0 || unmounted.length > 0) {
    throw new Error(
      [
        undocumented.length > 0 ? `Mounted by the app but not in the OpenAPI document: ${undocumented.join(', ')}.` : '',
        unmounted.length > 0 ? `In the OpenAPI document but not mounted: ${unmounted.join(', ')}.` : '',
        'Each route has one entry in src/api/openapi/paths/ (listed by routeDocs() in src/api/openapi/document.ts); then run `npm run openapi`.',
      ]
        .filter(Boolean)
        .join('\n'),
    );
  }
});

describe('a request body a route refuses, its schema in the document refuses too', () => {
  const motionId = 'motion-2:1700000000000-abcdefghij';
  const cases: { name: string; method: HttpMethod; template: string; url: string; headers: () => Record<string, string>; body: unknown }[] = [
    {
      name: 'an unknown parameter',
      method: 'post',
      template: '/v1/video/create',
      url: '/v1/video/create',
      headers: () => bearer(key),
      body: { model: 'vidgen3', prompt: 'a fox', colour: 'red' },
    },
    { name: 'no prompt', method: 'post', template: '/v1/video/create', url: '/v1/video/create', headers: () => bearer(key), body: { model: 'vidgen3' } },
    {
      name: 'an aspect ratio not offered',
      method: 'post',
      template: '/v1/video/create',
      url: '/v1/video/create',
      headers: () => bearer(key),
      body: { model: 'vidgen3', prompt: 'a fox', aspect_ratio: '4:3' },
    },
    {
      name: 'a remix size not offered',
      method: 'post',
      template: '/v1/videos/{id}/remix',
      url: `/v1/videos/${motionId}/remix`,
      headers: () => bearer(key),
      body: { prompt: 'brighter', size: '999x999' },
    },
    { name: 'a key with an empty name', method: 'post', template: '/admin/keys', url: '/admin/keys', headers: () => admin, body: { name: '' } },
    { name: 'a negative quota', method: 'post', template: '/admin/keys', url: '/admin/keys', headers: () => admin, body: { name: 'k', quota: -1 } },
    {
      name: 'a fractional rate limit',
      method: 'patch',
      template: '/admin/keys/{id}',
      url: '/admin/keys/key_none',
      headers: () => admin,
      body: { rate_limit_rpm: 1.5 },
    },
    {
      name: 'a character with neither url nor from_task, but an unknown field',
      method: 'post',
      template: '/motion/v1/characters',
      url: '/motion/v1/characters',
      headers: () => bearer(key),
      body: { clip: 'x' },
    },
    {
      name: 'max_tokens 0',
      method: 'post',
      template: '/v1/messages',
      url: '/v1/messages',
      headers: () => ({ 'x-api-key': key }),
      body: { model: 'cm-sonnet-4.5', max_tokens: 0, messages: [{ role: 'user', content: 'hi' }] },
    },
    {
      name: 'a temperature over 1',
      method: 'post',
      template: '/v1/messages',
      url: '/v1/messages',
      headers: () => ({ 'x-api-key': key }),
      body: { model: 'cm-sonnet-4.5', max_tokens: 10, temperature: 1.5, messages: [{ role: 'user', content: 'hi' }] },
    },
    {
      name: 'a chat message with an unknown role',
      method: 'post',
      template: '/v1/chat/completions',
      url: '/v1/chat/completions',
      headers: () => bearer(key),
      body: { model: 'motion-2', messages: [{ role: 'narrator', content: 'a fox' }] },
    },
  ];

  test.each(cases)('$method $template: $name', async ({ method, template, url, headers, body }) => {
    const answer = await documented(method, template, url, { headers: jsonHeaders(headers()), body: JSON.stringify(body) });
    expect(answer.status).toBe(400);
    expect(requestBodySchema(method, template)(body)).toBe(false);
  });

  test('and what a route accepts, the document accepts', async () => {
    const create = { model: 'vidgen3', prompt: 'a fox in the snow', aspect_ratio: '16:9' };
    expect(requestBodySchema('post', '/v1/video/create')(create)).toBe(true);
    expect((await documented('post', '/v1/video/create', '/v1/video/create', { headers: jsonHeaders(bearer(key)), body: JSON.stringify(create) })).status).toBe(
      200,
    );
    const issue = { name: 'doc', quota: 100, rate_limit_rpm: null };
    expect(requestBodySchema('post', '/admin/keys')(issue)).toBe(true);
    expect((await documented('post', '/admin/keys', '/admin/keys', { headers: jsonHeaders(admin), body: JSON.stringify(issue) })).status).toBe(201);
  });

  test('a query the route refuses, the parameter schema refuses', async () => {
    const limit = doc.paths['/v1/videos']?.get?.parameters?.find((p) => p.name === 'limit');
    expect(limit).toBeDefined();
    const validate = ajv.compile(limit!.schema);
    expect(validate(500)).toBe(false);
    expect(validate(50)).toBe(true);
    expect((await documented('get', '/v1/videos', '/v1/videos?limit=500', { headers: bearer(key) })).status).toBe(400);
  });
});

describe('what the routes answer is what the document says', () => {
  test('the checks can fail: a body missing a field does not match', () => {
    expect(schemaAt('components', 'schemas', 'Billing')({ object: 'billing' })).toBe(false);
    expect(schemaAt('components', 'schemas', 'Error')({ error: { message: 'm', type: 't', param: null } })).toBe(false);
  });

  test('health probes', async () => {
    await documented('get', '/livez', '/livez');
    await documented('get', '/readyz', '/readyz');
    await documented('get', '/healthz', '/healthz');
  });

  test('the admin API, and a key seeing its own billing', async () => {
    const issued = (
      await documented('post', '/admin/keys', '/admin/keys', { headers: jsonHeaders(admin), body: JSON.stringify({ name: 'doc-admin', quota: 1000 }) })
    ).body as { id: string; key: string };
    const id = issued.id;
    await documented('get', '/admin/keys', '/admin/keys', { headers: admin });
    await documented('get', '/admin/keys/{id}', `/admin/keys/${id}`, { headers: admin });
    await documented('patch', '/admin/keys/{id}', `/admin/keys/${id}`, { headers: jsonHeaders(admin), body: JSON.stringify({ rate_limit_rpm: 1000 }) });
    await documented('post', '/admin/keys/{id}/quota', `/admin/keys/${id}/quota`, {
      headers: jsonHeaders(admin),
      body: JSON.stringify({ delta: 5, reason: 'doc' }),
    });
    const ledger = await documented('get', '/admin/keys/{id}/ledger', `/admin/keys/${id}/ledger`, { headers: admin });
    expect((ledger.body as { data: unknown[] }).data.length).toBeGreaterThan(0);
    await documented('get', '/admin/keys/{id}/usage', `/admin/keys/${id}/usage?limit=5`, { headers: admin });
    await documented('get', '/admin/audit', '/admin/audit', { headers: admin });
    const channels = await documented('get', '/admin/channels', '/admin/channels', { headers: admin });
    expect((channels.body as { data: unknown[] }).data.length).toBeGreaterThan(0);

    // The limited key, with its rate limit headers.
    const billing = await documented('get', '/v1/billing', '/v1/billing', { headers: bearer(issued.key) });
    expect(billing.headers.get('x-ratelimit-limit-requests')).toBe('1000');
    const own = await documented('get', '/v1/billing/ledger', '/v1/billing/ledger?limit=2', { headers: bearer(issued.key) });
    expect((own.body as { data: unknown[] }).data.length).toBeGreaterThan(0);

    await documented('delete', '/admin/keys/{id}', `/admin/keys/${id}`, { headers: admin });
    expect((await documented('get', '/v1/billing', '/v1/billing', { headers: bearer(issued.key) })).status).toBe(401);
    expect((await documented('get', '/admin/keys/{id}', '/admin/keys/key_none', { headers: admin })).status).toBe(404);
    expect((await documented('get', '/admin/keys', '/admin/keys')).status).toBe(401);
    expect(
      (await documented('post', '/admin/keys/{id}/quota', '/admin/keys/key_none/quota', { headers: jsonHeaders(admin), body: JSON.stringify({ delta: 1 }) }))
        .status,
    ).toBe(404);
  });

  test('models', async () => {
    const list = (await documented('get', '/v1/models', '/v1/models', { headers: { 'x-api-key': key } })).body as { data: { id: string }[] };
    expect(list.data.length).toBeGreaterThan(0);
    await documented('get', '/v1/models/{id}', `/v1/models/${encodeURIComponent(list.data[0]!.id)}`, { headers: bearer(key) });
    expect((await documented('get', '/v1/models/{id}', '/v1/models/no-such-model', { headers: bearer(key) })).status).toBe(404);
  });

  test('the JSON video family', async () => {
    const created = (
      await documented('post', '/v1/video/create', '/v1/video/create', {
        headers: jsonHeaders(bearer(key)),
        body: JSON.stringify({ model: 'vidgen3', prompt: 'a lighthouse' }),
      })
    ).body as { id: string };
    await documented('get', '/v1/video/query', `/v1/video/query?id=${encodeURIComponent(created.id)}`, { headers: bearer(key) });
    // The other family reads it too, in the vidgen shape.
    await documented('get', '/v1/videos/{id}', `/v1/videos/${encodeURIComponent(created.id)}`, { headers: bearer(key) });
    expect((await documented('get', '/v1/video/query', '/v1/video/query', { headers: bearer(key) })).status).toBe(400);
    expect((await documented('get', '/v1/video/query', '/v1/video/query?id=vidgen3:1-none', { headers: bearer(key) })).status).toBe(404);
    expect((await documented('get', '/v1/videos/{id}/content', `/v1/videos/${encodeURIComponent(created.id)}/content`, { headers: bearer(key) })).status).toBe(
      409,
    );
    expect((await documented('post', '/v1/video/create', '/v1/video/create', { body: '{}' })).status).toBe(401);
  });

  test('the /v1/videos family: create (multipart), read, list, content (JSON and bytes), the file link, remix', async () => {
    const form = new FormData();
    for (const [name, value] of Object.entries({ model: 'motion-2', prompt: 'a kite over the sea', seconds: '10', size: '720x1280', watermark: 'false' }))
      form.append(name, value);
    const created = (await documented('post', '/v1/videos', '/v1/videos', { headers: bearer(key), body: form })).body as { id: string; created_at: number };
    const id = encodeURIComponent(created.id);
    await documented('get', '/v1/videos/{id}', `/v1/videos/${id}`, { headers: bearer(key) });

    // The task done, its file stored, and listed as the store lists a key's tasks.
    const videoKey = `videos/motion-2/${created.id.replace(/[^\w.-]/g, '_')}.mp4`;
    const bytes = Buffer.concat([Buffer.from([0, 0, 0, 24]), Buffer.from('ftypmp42'), Buffer.alloc(100, 1)]);
    await app.blobs.write(videoKey, bytes);
    const state = app.fakes.states.get(created.id)!;
    app.fakes.states.set(created.id, {
      ...state,
      status: 'completed',
      progress: 100,
      video: { key: videoKey, contentType: 'video/mp4', bytes: bytes.length },
      upstream: { channel: 'sim-motion', jobId: 'job_1' },
    });
    await app.db.query("insert into billed_tasks (task_id, key_id, kind, model, amount, state) values ($1, $2, 'video', 'motion-2', 0, 'completed')", [
      created.id,
      keyId,
    ]);
    const list = (await documented('get', '/v1/videos', '/v1/videos?limit=5', { headers: bearer(key) })).body as { data: { id: string }[] };
    expect(list.data.map((v) => v.id)).toContain(created.id);
    expect((await documented('get', '/v1/videos', '/v1/videos?after=nope', { headers: bearer(key) })).status).toBe(400);

    const content = (await documented('get', '/v1/videos/{id}/content', `/v1/videos/${id}/content`, { headers: bearer(key) })).body as { video_url: string };
    const file = await documented('get', '/v1/videos/{id}/content', `/v1/videos/${id}/content`, { headers: { ...bearer(key), accept: 'application/binary' } });
    expect(file.type).toBe('video/mp4');
    expect(file.body).toEqual(bytes);
    const part = await documented('get', '/v1/videos/{id}/content', `/v1/videos/${id}/content?variant=video`, {
      headers: { ...bearer(key), range: 'bytes=0-9' },
    });
    expect(part.status).toBe(206);
    expect((await documented('get', '/v1/videos/{id}/content', `/v1/videos/${id}/content?variant=thumbnail`, { headers: bearer(key) })).status).toBe(404);
    expect((await documented('get', '/v1/videos/{id}/content', `/v1/videos/${id}/content?variant=poster`, { headers: bearer(key) })).status).toBe(400);

    const link = new URL(content.video_url);
    expect(link.origin).toBe(BASE_URL);
    const fetched = await documented('get', '/files/{path}', `${link.pathname}${link.search}`);
    expect(fetched.body).toEqual(bytes);
    // A client that escapes the path parameter, as OpenAPI's path templating has it, gets the same file.
    const escaped = link.pathname.slice('/files/'.length).split('/').join('%2F');
    expect((await documented('get', '/files/{path}', `/files/${escaped}${link.search}`)).body).toEqual(bytes);
    expect((await documented('get', '/files/{path}', `${link.pathname}${link.search}`, { headers: { range: 'bytes=5-' } })).status).toBe(206);
    expect((await documented('get', '/files/{path}', `${link.pathname}${link.search}`, { headers: { range: 'bytes=900-' } })).status).toBe(416);
    expect((await documented('get', '/files/{path}', `${link.pathname}?expires=1&signature=x`)).status).toBe(403);

    const remix = await documented('post', '/v1/videos/{id}/remix', `/v1/videos/${id}/remix`, {
      headers: jsonHeaders(bearer(key)),
      body: JSON.stringify({ prompt: 'at dusk' }),
    });
    expect(remix.body).toMatchObject({ object: 'video', status: 'pending' });
    expect(
      (
        await documented('post', '/v1/videos/{id}/remix', '/v1/videos/motion-2:1-none/remix', {
          headers: jsonHeaders(bearer(key)),
          body: JSON.stringify({ prompt: 'x' }),
        })
      ).status,
    ).toBe(404);
  });

  test('characters', async () => {
    app.fakes.characters.set('char_doc.fox', {
      id: 'char_doc.fox',
      username: 'doc.fox',
      ownerId: keyId,
      channel: 'sim-motion',
      upstreamId: 'ch_1',
      profileKey: 'characters/char_doc.fox.png',
      createdAt: 1_700_000_000,
    });
    const found = await documented('get', '/motion/v1/characters/{id}', '/motion/v1/characters/char_doc.fox', { headers: bearer(key) });
    expect(found.body).toMatchObject({ id: 'char_doc.fox', permalink: `${BASE_URL}/motion/v1/characters/char_doc.fox` });
    expect((await documented('get', '/motion/v1/characters/{id}', '/motion/v1/characters/char_nobody', { headers: bearer(key) })).status).toBe(404);
  });

  test('chat completions of a text model, whole and streamed (each event a ChatCompletionChunk)', async () => {
    const request = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hi' }], max_tokens: 20 };
    const whole = await documented('post', '/v1/chat/completions', '/v1/chat/completions', {
      headers: jsonHeaders(bearer(key)),
      body: JSON.stringify(request),
    });
    expect(whole.body).toMatchObject({ object: 'chat.completion' });
    const streamed = await documented('post', '/v1/chat/completions', '/v1/chat/completions', {
      headers: jsonHeaders(bearer(key)),
      body: JSON.stringify({ ...request, stream: true, stream_options: { include_usage: true } }),
    });
    expect(streamed.type).toBe('text/event-stream');
    const events = dataEvents(streamed.body as Buffer);
    expect(events.at(-1)).toBe('[DONE]');
    const chunk = schemaAt('components', 'schemas', 'ChatCompletionChunk');
    for (const event of events.slice(0, -1)) {
      if (!chunk(JSON.parse(event))) throw new Error(`a stream event the document does not describe: ${ajv.errorsText(chunk.errors)}\n${event}`);
    }
    expect(events.length).toBeGreaterThan(2);
  });

  test('chat completions of a motion model, whole and streamed, as its task completes', async () => {
    /** Completes the next task the route starts, once it has started it. */
    const completeNextTask = async () => {
      const before = app.fakes.started.length;
      while (app.fakes.started.length === before) await new Promise((r) => setTimeout(r, 20));
      const id = app.fakes.started.at(-1)!.taskId;
      const state = app.fakes.states.get(id)!;
      app.fakes.states.set(id, {
        ...state,
        status: 'completed',
        progress: 100,
        video: { key: `videos/motion-2/${id}.mp4`, contentType: 'video/mp4', bytes: 1 },
      });
    };
    const request = { model: 'motion-2', messages: [{ role: 'user', content: 'a paper boat on a river' }] };
    const [whole] = await Promise.all([
      documented('post', '/v1/chat/completions', '/v1/chat/completions', { headers: jsonHeaders(bearer(key)), body: JSON.stringify(request) }),
      completeNextTask(),
    ]);
    expect(whole.body).toMatchObject({ object: 'chat.completion', choices: [{ message: { content: expect.stringContaining('video_url: ') } }] });
    const [streamed] = await Promise.all([
      documented('post', '/v1/chat/completions', '/v1/chat/completions', {
        headers: jsonHeaders(bearer(key)),
        body: JSON.stringify({ ...request, stream: true }),
      }),
      completeNextTask(),
    ]);
    expect(streamed.type).toBe('text/event-stream');
    const events = dataEvents(streamed.body as Buffer);
    expect(events.at(-1)).toBe('[DONE]');
    const chunk = schemaAt('components', 'schemas', 'ChatCompletionChunk');
    for (const event of events.slice(0, -1)) {
      if (!chunk(JSON.parse(event))) throw new Error(`a stream event the document does not describe: ${ajv.errorsText(chunk.errors)}\n${event}`);
    }
  });

  test('a native message, and its token count', async () => {
    const request = { model: 'cm-haiku-4.5', max_tokens: 20, messages: [{ role: 'user', content: 'Say hi' }] };
    const message = await documented('post', '/v1/messages', '/v1/messages', { headers: jsonHeaders({ 'x-api-key': key }), body: JSON.stringify(request) });
    expect(message.body).toMatchObject({ type: 'message', role: 'assistant' });
    const streamed = await documented('post', '/v1/messages', '/v1/messages', {
      headers: jsonHeaders({ 'x-api-key': key }),
      body: JSON.stringify({ ...request, stream: true }),
    });
    expect(streamed.type).toBe('text/event-stream');
    const { max_tokens: _unused, ...countRequest } = request;
    const count = await documented('post', '/v1/messages/count_tokens', '/v1/messages/count_tokens', {
      headers: jsonHeaders(bearer(key)),
      body: JSON.stringify(countRequest),
    });
    expect(count.body).toEqual(expect.objectContaining({ input_tokens: expect.any(Number) }));
  });

  test('errors of the text endpoints, in their shapes', async () => {
    const chat = await documented('post', '/v1/chat/completions', '/v1/chat/completions', {
      headers: jsonHeaders(bearer(key)),
      body: JSON.stringify({ model: 'vidgen3', messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(chat.status).toBe(400);
    const messages = await documented('post', '/v1/messages', '/v1/messages', {
      headers: jsonHeaders({ 'x-api-key': 'sk-wrong' }),
      body: JSON.stringify({ model: 'cm-sonnet-4.5', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(messages.status).toBe(401);
    expect(messages.body).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    const count = await documented('post', '/v1/messages/count_tokens', '/v1/messages/count_tokens', {
      headers: jsonHeaders({ 'x-api-key': key }),
      body: JSON.stringify({ model: 'cm-sonnet-4.5', messages: [] }),
    });
    expect(count.status).toBe(400);
  });
});
