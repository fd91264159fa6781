/**
 * Every bad input gets a clear 4xx in the OpenAI error shape, naming the parameter:
 * never a 500, never a hang. Also the key lifecycle (401 for missing, unknown, revoked and
 * foreign keys) and the admin API. In process (harness.ts): none of it needs a worker.
 */
import { THUMBNAIL_PNG } from '../../simulator/assets';
import { call } from '../support/client';
import { ADMIN_TOKEN, startRouteApp, type RouteApp } from './harness';

let gw: RouteApp;
let key: string;
const BODY_LIMIT = 64 * 1024;

beforeAll(async () => {
  gw = await startRouteApp({ MAX_JSON_BODY_BYTES: String(BODY_LIMIT), FETCH_ALLOW_PRIVATE: 'false' });
  key = await gw.issueKey();
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

function expectError(res: { status: number; body: unknown }, status: number, param?: string | null): ErrorBody['error'] {
  expect(res.status).toBe(status);
  const body = res.body as ErrorBody;
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(body.error.message.length).toBeGreaterThan(10);
  if (param !== undefined) expect(body.error.param).toBe(param);
  return body.error;
}

const create = (json: unknown) => call(`${gw.url}/v1/video/create`, { key, json });
const png = `data:image/png;base64,${THUMBNAIL_PNG.toString('base64')}`;

const invalidBodies: [string, unknown, string | null, RegExp?][] = [
  ['missing prompt', { model: 'vidgen3' }, 'prompt', /Missing required parameter/],
  ['empty prompt', { model: 'vidgen3', prompt: '   ' }, 'prompt'],
  ['missing model', { prompt: 'x' }, 'model'],
  ['unknown model', { model: 'vidgen9', prompt: 'x' }, 'model', /does not exist/],
  ['a /v1/videos-only model', { model: 'vidgen_3_1', prompt: 'x' }, 'model', /\/v1\/videos/],
  ['a text model', { model: 'cm-sonnet-4.5', prompt: 'x' }, 'model'],
  ['prompt of the wrong type', { model: 'vidgen3', prompt: 42 }, 'prompt'],
  ['enhance_prompt not a boolean', { model: 'vidgen3', prompt: 'x', enhance_prompt: 'yes' }, 'enhance_prompt'],
  ['enable_upsample not a boolean', { model: 'vidgen3', prompt: 'x', enable_upsample: 1 }, 'enable_upsample'],
  ['bad aspect_ratio', { model: 'vidgen3', prompt: 'x', aspect_ratio: '4:3' }, 'aspect_ratio'],
  ['images not an array', { model: 'vidgen3', prompt: 'x', images: 'http://example.com/a.png' }, 'images'],
  ['too many images (vidgen3-pro-frames takes 1)', { model: 'vidgen3-pro-frames', prompt: 'x', images: [png, png] }, 'images', /at most 1/],
  ['too many images (vidgen2-fast-frames takes 2)', { model: 'vidgen2-fast-frames', prompt: 'x', images: [png, png, png] }, 'images', /at most 2/],
  ['too many images (vidgen2-fast-components takes 3)', { model: 'vidgen2-fast-components', prompt: 'x', images: [png, png, png, png] }, 'images', /at most 3/],
  ['an image that is neither URL nor data URL', { model: 'vidgen3', prompt: 'x', images: ['not a url'] }, 'images[0]'],
  [
    'a data URL that is not an image',
    { model: 'vidgen3', prompt: 'x', images: [`data:image/png;base64,${Buffer.from('hello').toString('base64')}`] },
    'images[0]',
  ],
  ['an image URL on a private address', { model: 'vidgen3', prompt: 'x', images: ['http://127.0.0.1/a.png'] }, 'images[0]', /private/],
  ['an image URL with another scheme', { model: 'vidgen3', prompt: 'x', images: ['ftp://example.com/a.png'] }, 'images[0]'],
  ['a motion parameter on a vidgen model', { model: 'vidgen3', prompt: 'x', duration: 10 }, 'duration'],
  ['aspect_ratio on a motion model', { model: 'motion-2', prompt: 'x', images: [], aspect_ratio: '16:9' }, 'aspect_ratio', /orientation/],
  ['motion without images', { model: 'motion-2', prompt: 'x' }, 'images'],
  ['duration motion-2 does not allow', { model: 'motion-2', prompt: 'x', images: [], duration: 15 }, 'duration', /10/],
  ['duration motion-2-pro does not allow', { model: 'motion-2-pro', prompt: 'x', images: [], duration: 12 }, 'duration', /10, 15, 25/],
  ['duration not an integer', { model: 'motion-2-pro', prompt: 'x', images: [], duration: '15' }, 'duration'],
  ['bad orientation', { model: 'motion-2', prompt: 'x', images: [], orientation: 'square' }, 'orientation'],
  ['bad size', { model: 'motion-2', prompt: 'x', images: [], size: 'medium' }, 'size'],
  ['watermark not a boolean', { model: 'motion-2', prompt: 'x', images: [], watermark: 'false' }, 'watermark'],
  ['character_url not a URL', { model: 'motion-2', prompt: 'x', images: [], character_url: 'clip.mp4' }, 'character_url'],
  [
    'character_timestamps malformed',
    { model: 'motion-2', prompt: 'x', images: [], character_url: 'https://example.com/c.mp4', character_timestamps: '1-2' },
    'character_timestamps',
  ],
  [
    'character span over 3 s',
    { model: 'motion-2', prompt: 'x', images: [], character_url: 'https://example.com/c.mp4', character_timestamps: '0,5' },
    'character_timestamps',
    /1 to 3 seconds/,
  ],
  [
    'character span under 1 s',
    { model: 'motion-2', prompt: 'x', images: [], character_url: 'https://example.com/c.mp4', character_timestamps: '2,2.5' },
    'character_timestamps',
  ],
  ['character_timestamps without character_url', { model: 'motion-2', prompt: 'x', images: [], character_timestamps: '0,2' }, 'character_timestamps'],
  ['an unknown parameter', { model: 'vidgen3', prompt: 'x', aspectRatio: '16:9' }, 'aspectRatio', /Unrecognized/],
  ['a JSON array body', [1, 2], null],
];

// Every row has four cells: jest hands a missing last one to the test as its `done` callback.
test.each(invalidBodies.map(([name, json, param, message]) => [name, json, param, message ?? null] as const))(
  '400 for %s',
  async (_name, json, param, message) => {
    const err = expectError(await create(json), 400, param);
    expect(err.type).toBe('invalid_request_error');
    if (message) expect(err.message).toMatch(message);
  },
);

test('400 for malformed JSON and for a wrong content type', async () => {
  expectError(await call(`${gw.url}/v1/video/create`, { key, body: '{"model": "vidgen3",', headers: { 'content-type': 'application/json' } }), 400);
  const wrongType = expectError(
    await call(`${gw.url}/v1/video/create`, { key, body: 'model=vidgen3&prompt=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
    400,
  );
  expect(wrongType.message).toMatch(/application\/json/);
  expectError(await call(`${gw.url}/v1/video/create`, { key, body: '{}', headers: {} }), 400);
});

test('413 over the documented body size limit', async () => {
  const big = { model: 'vidgen3', prompt: 'x', images: [`data:image/png;base64,${'A'.repeat(BODY_LIMIT)}`] };
  const err = expectError(await create(big), 413);
  expect(err.code).toBe('request_too_large');
});

test('query: 400 without id, 404 for unknown ids of any shape', async () => {
  expectError(await call(`${gw.url}/v1/video/query`, { key }), 400, 'id');
  expectError(await call(`${gw.url}/v1/video/query?id=`, { key }), 400, 'id');
  expectError(await call(`${gw.url}/v1/video/query?id=vidgen3:1795335070122-doesnotexist`, { key }), 404, 'id');
  expectError(await call(`${gw.url}/v1/video/query?id=${encodeURIComponent('../../etc/passwd')}`, { key }), 404, 'id');
});

describe('keys', () => {
  const query = (authorization?: string) => call(`${gw.url}/v1/video/query?id=x`, { headers: authorization ? { authorization } : {} });

  test.each([
    ['no key', undefined, /didn't provide/],
    ['an unknown key', 'Bearer sk-thisisnotakeyissuedbythegatewayatall0000000', /Incorrect API key/],
    ['an Anthropic key', 'Bearer sk-ant-api03-abcdefghijklmnopqrstuvwxyz', /another provider/],
    ['an OpenAI project key', 'Bearer sk-proj-abcdefghijklmnopqrstuvwxyz', /another provider/],
    ['a malformed header', 'Token abc', /didn't provide/],
  ])('401 for %s', async (_name, header, message) => {
    const err = expectError(await query(header), 401);
    expect(err.code).toBe('invalid_api_key');
    expect(err.message).toMatch(message);
  });

  test('issue, list without secrets, revoke: a revoked key gets 401 at once', async () => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const issued = await call<{ id: string; name: string; key: string; created_at: number }>(`${gw.url}/admin/keys`, {
      json: { name: 'short-lived' },
      headers: admin,
    });
    expect(issued.status).toBe(201);
    expect(Object.keys(issued.body).sort()).toEqual([
      'balance',
      'created_at',
      'id',
      'key',
      'max_concurrent_tasks',
      'max_text_in_flight',
      'name',
      'rate_limit_rpm',
    ]);
    expect(issued.body).toMatchObject({ balance: null, rate_limit_rpm: null, max_concurrent_tasks: null }); // unlimited unless given
    expect(issued.body.key).toMatch(/^sk-[A-Za-z0-9_-]{43,}$/);
    expect((await query(`Bearer ${issued.body.key}`)).status).toBe(404); // authenticated; id unknown

    const listed = await call<{ data: Record<string, unknown>[] }>(`${gw.url}/admin/keys`, { headers: admin });
    expect(listed.status).toBe(200);
    const entry = listed.body.data.find((k) => k.id === issued.body.id);
    expect(entry?.name).toBe('short-lived');
    expect(JSON.stringify(listed.body)).not.toContain(issued.body.key);

    const revoked = await call(`${gw.url}/admin/keys/${issued.body.id}`, { method: 'DELETE', headers: admin });
    expect(revoked.status).toBe(200);
    expectError(await query(`Bearer ${issued.body.key}`), 401);
    expect((await call(`${gw.url}/admin/keys/${issued.body.id}`, { method: 'DELETE', headers: admin })).status).toBe(404);
  });

  test('admin endpoints need the admin token', async () => {
    expectError(await call(`${gw.url}/admin/keys`), 401);
    expectError(await call(`${gw.url}/admin/keys`, { headers: { authorization: `Bearer ${key}` } }), 401);
    expectError(await call(`${gw.url}/admin/keys`, { json: {}, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }), 400, 'name');
  });
});

test('unknown routes are 404 in the same error shape', async () => {
  expectError(await call(`${gw.url}/v1/video/nope`, { key }), 404);
});
