/**
 * The rules of the edge that need no worker, in process: authentication, validation, unknown
 * routes, and how the domain's errors reach a client, in the OpenAI shape on /v1 and in
 * Anthropic's on /v1/messages.
 */
import { TaskNotAffordable, TaskServiceUnavailable, TooManyTasks } from '../../src/tasks/task-errors';
import { startRouteApp, type RouteApp } from './harness';

let app: RouteApp;
let key: string;

beforeAll(async () => {
  app = await startRouteApp();
  key = await app.issueKey();
}, 60_000);

afterAll(async () => {
  await app?.close();
});

beforeEach(() => {
  app.fakes.startFails = null;
});

async function post(path: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${key}` }) {
  const res = await fetch(`${app.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

const create = { model: 'vidgen3', prompt: 'a red fox running through snow' };

describe('authentication', () => {
  test('a create without a key is 401 in the OpenAI shape', async () => {
    const res = await post('/v1/video/create', create, {});
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
  });

  test('a messages call with a wrong key is 401 in the Anthropic shape, with its request id', async () => {
    const res = await post(
      '/v1/messages',
      { model: 'cm-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
      { 'x-api-key': 'sk-wrong' },
    );
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ type: 'error', error: { type: 'authentication_error', message: expect.any(String) } });
    expect(res.body.request_id).toBe(res.headers.get('request-id'));
  });
});

describe('validation', () => {
  test('a create without a prompt is 400 naming the field; nothing is started', async () => {
    const res = await post('/v1/video/create', { model: 'vidgen3' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: { type: 'invalid_request_error', param: 'prompt' } });
    expect(app.fakes.started).toHaveLength(0);
  });

  test('a body that is not JSON is 400 invalid_json, in Anthropic shape on /v1/messages', async () => {
    expect((await post('/v1/video/create', '{"model":')).body).toMatchObject({ error: { code: 'invalid_json' } });
    const messages = await post('/v1/messages', '{"model":', { 'x-api-key': key });
    expect(messages.status).toBe(400);
    expect(messages.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  test('an unknown route is 404 unknown_route', async () => {
    const res = await fetch(`${app.url}/v1/nowhere`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: 'unknown_route' } });
  });
});

describe('domain errors become HTTP in one place', () => {
  test('a task the balance cannot pay for is 402 insufficient_quota', async () => {
    app.fakes.startFails = new TaskNotAffordable("This vidgen3 task costs 5 credits and the key's balance is 1.");
    const res = await post('/v1/video/create', create);
    expect(res.status).toBe(402);
    expect(res.body).toEqual({
      error: { message: "This vidgen3 task costs 5 credits and the key's balance is 1.", type: 'insufficient_quota', param: null, code: 'insufficient_quota' },
    });
  });

  test('too many tasks in flight is 429 too_many_tasks with Retry-After', async () => {
    app.fakes.startFails = new TooManyTasks('This key already has 3 video tasks in flight, its limit.', 7);
    const res = await post('/v1/video/create', create);
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(res.body).toMatchObject({ error: { type: 'rate_limit_error', code: 'too_many_tasks' } });
  });

  test('the task service unavailable is 503 temporal_unavailable with Retry-After', async () => {
    app.fakes.startFails = new TaskServiceUnavailable('The task service is unavailable (Temporal did not answer). Retry in a few seconds.');
    const res = await post('/v1/video/create', create);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(res.body).toMatchObject({ error: { type: 'server_error', code: 'temporal_unavailable' } });
  });

  test('an unexpected error is a 500 that names only the request id', async () => {
    app.fakes.startFails = new Error('secret detail of a driver');
    const res = await post('/v1/video/create', create);
    expect(res.status).toBe(500);
    const message = (res.body.error as { message: string }).message;
    const requestId = res.headers.get('x-request-id');
    expect(requestId).toMatch(/^req_/);
    expect(message).toContain(`quote request id ${requestId}`);
    expect(message).not.toContain('secret detail');
  });
});

test('a create that succeeds answers the task in the /v1/video shape, owned by the caller', async () => {
  const res = await post('/v1/video/create', create);
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ id: expect.stringMatching(/^vidgen3:/), status: 'pending' });
  const query = await fetch(`${app.url}/v1/video/query?id=${encodeURIComponent(String(res.body.id))}`, { headers: { authorization: `Bearer ${key}` } });
  expect(query.status).toBe(200);
  const other = await app.issueKey();
  const foreign = await fetch(`${app.url}/v1/video/query?id=${encodeURIComponent(String(res.body.id))}`, { headers: { authorization: `Bearer ${other}` } });
  expect(foreign.status).toBe(404);
});
