/**
 * Bounded work per request, before any charge or upstream call (issue 17, item 5), through the
 * real API process: JSON nesting, request targets that do not decode, @mentions, and failed key
 * lookups (a miss cache, then a per-address limit with 429 in each family's error shape).
 */
import net from 'node:net';
import { gzipSync } from 'node:zlib';
import { call } from '../support/client';
import { buildRequest, rawRequest } from '../support/raw-http';
import { createTestDatabase } from '../support/services';
import { ADMIN_TOKEN, startGateway, type Gateway } from '../support/stack';

let gw: Gateway;
let key: string;
let port: number;
let store: StatementCounter;

/**
 * A relay between the API and PostgreSQL that counts the key lookups going through it: the
 * driver sends each statement's text with every (unnamed) prepared call, so the count is
 * exact and immediate, unlike PostgreSQL's own statistics.
 */
interface StatementCounter {
  port: number;
  count(): number;
  close(): void;
}

async function statementCounter(target: URL, needle: string): Promise<StatementCounter> {
  let count = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    let tail = '';
    client.on('data', (chunk: Buffer) => {
      // A statement split across two chunks is still seen once: search the previous chunk's tail too.
      const text = tail + chunk.toString('latin1');
      for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + needle.length)) count++;
      tail = text.slice(-(needle.length - 1));
      upstream.write(chunk);
    });
    upstream.pipe(client);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => (client.destroy(), upstream.destroy(), sockets.delete(s)));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    count: () => count,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

beforeAll(async () => {
  const database = new URL(await createTestDatabase(`gw-edge-${process.pid}`));
  store = await statementCounter(database, 'from api_keys where key_hash = $1');
  const relayed = new URL(database.href);
  relayed.host = `127.0.0.1:${store.port}`;
  gw = await startGateway({ noWorker: true, env: { DATABASE_URL: relayed.href } });
  key = await gw.issueKey('edge');
  port = Number(new URL(gw.url).port);
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  store?.close();
}, 120_000);

interface OpenAiError {
  error: { message: string; type: string; param: string | null; code: string | null };
}
interface AnthropicError {
  type: 'error';
  error: { type: string; message: string };
  request_id: string;
}

function expectOpenAi(res: { status: number; body: unknown }, status: number, code?: string): OpenAiError['error'] {
  expect(res.status).toBe(status);
  const body = res.body as OpenAiError;
  expect(Object.keys(body)).toEqual(['error']);
  if (code) expect(body.error.code).toBe(code);
  return body.error;
}

function expectAnthropic(res: { status: number; body: unknown }, status: number, type: string): AnthropicError['error'] {
  expect(res.status).toBe(status);
  const body = res.body as AnthropicError;
  expect(body.type).toBe('error');
  expect(body.error.type).toBe(type);
  expect(body.request_id).toMatch(/\w/);
  return body.error;
}

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const chatText = (extra: string) => `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]${extra}}`;
const messagesText = (extra: string) => `{"model":"cm-sonnet-4.5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]${extra}}`;
const json = { 'content-type': 'application/json' };

describe('JSON nesting', () => {
  // Streamed, the proxy rewrites the body (usage is always asked for), which is where the depth overflowed.
  test.each([false, true])('a 150,000-deep array in an unknown field is a 400 on chat completions, not a 500 (stream: %s)', async (stream) => {
    const res = await call(`${gw.url}/v1/chat/completions`, { key, body: chatText(`,"stream":${stream},"x":${nested(150_000)}`), headers: json });
    expect(expectOpenAi(res, 400, 'json_too_deep').message).toContain('64 levels');
  });

  test.each([false, true])("the same on /v1/messages, in Anthropic's shape (stream: %s)", async (stream) => {
    const res = await call(`${gw.url}/v1/messages`, {
      body: messagesText(`,"stream":${stream},"x":${nested(150_000)}`),
      headers: { ...json, 'x-api-key': key },
    });
    expect(expectAnthropic(res, 400, 'invalid_request_error').message).toContain('64 levels');
  });

  test('every JSON endpoint refuses it: video create, remix, characters, admin', async () => {
    const deep = `{"model":"vidgen3","prompt":"x","x":${nested(100)}}`;
    for (const url of [`${gw.url}/v1/video/create`, `${gw.url}/v1/videos/video_abc/remix`, `${gw.url}/motion/v1/characters`]) {
      expectOpenAi(await call(url, { key, body: deep, headers: json }), 400, 'json_too_deep');
    }
    expectOpenAi(await call(`${gw.url}/admin/keys`, { body: deep, headers: { ...json, authorization: `Bearer ${ADMIN_TOKEN}` } }), 400, 'json_too_deep');
  });

  test('64 levels are accepted and reach the upstream', async () => {
    const res = await call(`${gw.url}/v1/chat/completions`, { key, body: chatText(`,"metadata":{"x":${nested(62)}}`), headers: json });
    expect(res.status).toBe(200);
  });

  test('a compressed body is a 400 that names its encoding, on JSON and multipart routes alike', async () => {
    const gz = gzipSync(Buffer.from(chatText('')));
    const json = await call(`${gw.url}/v1/chat/completions`, { key, body: gz, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
    expect(expectOpenAi(json, 400, 'unsupported_content_encoding').message).toContain("'gzip'");
    expect(json.headers.get('accept-encoding')).toBe('identity');
    const form = await call(`${gw.url}/v1/videos`, {
      key,
      body: gz,
      headers: { 'content-type': 'multipart/form-data; boundary=x', 'content-encoding': 'br' },
    });
    expect(expectOpenAi(form, 400, 'unsupported_content_encoding').message).toContain("'br'");
    // identity is no encoding at all.
    expect(
      (
        await call(`${gw.url}/v1/chat/completions`, {
          key,
          body: chatText(''),
          headers: { 'content-type': 'application/json', 'content-encoding': 'identity' },
        })
      ).status,
    ).toBe(200);
  });

  test('a body that is not UTF-8 is a 400', async () => {
    const body = Buffer.concat([
      Buffer.from('{"model":"gpt-4o-mini","messages":[{"role":"user","content":"'),
      Buffer.from([0xc3, 0x28, 0xff]),
      Buffer.from('"}]}'),
    ]);
    expectOpenAi(await call(`${gw.url}/v1/chat/completions`, { key, body, headers: json }), 400, 'invalid_json');
  });

  test.each([
    [
      'more than 40 fields',
      'The form has more than 40 fields.',
      (form: FormData) => {
        for (let i = 0; i < 41; i++) form.append(`extra${i}`, 'x');
      },
    ],
    [
      'text fields over 1 MiB in all',
      "The form's text fields exceed 1048576 bytes in all.",
      (form: FormData) => {
        form.append('metadata', 'x'.repeat(1024 * 1024 + 1));
      },
    ],
    [
      'more than 4 files',
      'The form has more than 4 files.',
      (form: FormData) => {
        for (let i = 0; i < 5; i++) form.append(`file${i}`, new Blob([new Uint8Array(8)], { type: 'image/png' }), `f${i}.png`);
      },
    ],
  ])('a /v1/videos form with %s is a 413 that names that limit', async (_name, message, add) => {
    const form = new FormData();
    for (const [name, value] of Object.entries({ model: 'motion-2', prompt: 'a fox', seconds: '10', size: '720x1280' })) form.append(name, value);
    add(form);
    const res = await fetch(`${gw.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    const error = expectOpenAi({ status: res.status, body: await res.json() }, 413, 'request_too_large');
    expect(error.message).toBe(message);
  });

  test('a /v1/videos form with an empty file is a 400 that says so', async () => {
    const form = new FormData();
    for (const [name, value] of Object.entries({ model: 'motion-2', prompt: 'a fox', seconds: '10', size: '720x1280' })) form.append(name, value);
    form.append('input_reference', new Blob([], { type: 'image/png' }), 'empty.png');
    const res = await fetch(`${gw.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    expect(expectOpenAi({ status: res.status, body: await res.json() }, 400, 'invalid_multipart').message).toBe('An uploaded file is empty.');
  });

  test('the multipart metadata field of /v1/videos is bounded too', async () => {
    const form = new FormData();
    for (const [name, value] of Object.entries({ model: 'motion-2', prompt: 'a fox', seconds: '10', size: '720x1280', metadata: `{"a":${nested(100)}}` }))
      form.append(name, value);
    const res = await fetch(`${gw.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    const error = expectOpenAi({ status: res.status, body: await res.json() }, 400);
    expect(error.param).toBe('metadata');
    expect(error.message).toContain('64 levels');
  });
});

describe('request targets', () => {
  test('GET /files/%E0%A4%A is a 400, not a 500', async () => {
    expectOpenAi(await call(`${gw.url}/files/%E0%A4%A`), 400, 'invalid_url');
  });

  test.each([
    ['a route parameter', '/v1/videos/%E0%A4%A'],
    ['a truncated escape', '/v1/videos/abc%'],
    ['an encoded lone surrogate', '/v1/models/%ED%A0%80'],
    ['an encoded NUL', '/v1/videos/video_%00'],
    ['the query string', '/v1/video/query?id=%E0%A4%A'],
  ])('%s that does not decode is a 400 in the OpenAI shape', async (_name, target) => {
    const res = await rawRequest(
      port,
      buildRequest('GET', target, [
        ['Host', 'x'],
        ['Authorization', `Bearer ${key}`],
        ['Connection', 'close'],
      ]),
    );
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body.toString()).error.code).toBe('invalid_url');
  });

  test('an admin id with a NUL is a 400, not a store error', async () => {
    expectOpenAi(await call(`${gw.url}/admin/keys/key%00x`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }), 400, 'invalid_url');
  });

  test('a NUL in text the store keeps (a key name, a quota reason) is a 400, not a store error', async () => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    expectOpenAi(await call(`${gw.url}/admin/keys`, { json: { name: 'a\u0000b' }, headers: admin }), 400, 'invalid_text');
    const spare = await gw.issueKeyWithId('nul', { quota: 10 });
    expectOpenAi(await call(`${gw.url}/admin/keys/${spare.id}/quota`, { json: { delta: 1, reason: '\u0000' }, headers: admin }), 400, 'invalid_text');
  });

  test("/v1/messages answers a bad query string in Anthropic's shape", async () => {
    const res = await call(`${gw.url}/v1/messages?beta=%ZZ`, { body: messagesText(''), headers: { ...json, 'x-api-key': key } });
    expectAnthropic(res, 400, 'invalid_request_error');
  });

  test('duplicated and array query parameters are 4xx, never 5xx', async () => {
    for (const target of [
      '/v1/video/query?id=a&id=b',
      '/v1/video/query?id[]=a',
      '/v1/billing/ledger?limit=1&limit=2',
      '/v1/billing/ledger?limit[x]=1',
      '/files/videos/a.mp4?expires=1&expires=2&signature=x',
    ]) {
      const res = await call(`${gw.url}${target}`, { key });
      expect([400, 403, 404]).toContain(res.status);
    }
  });

  test('a very long path is refused by the server (431), and the next request is served', async () => {
    const res = await rawRequest(
      port,
      buildRequest('GET', `/v1/models/${'a'.repeat(20_000)}`, [
        ['Host', 'x'],
        ['Connection', 'close'],
      ]),
    );
    expect(res.status).toBe(431);
    expect((await call(`${gw.url}/v1/models`, { key })).status).toBe(200);
  });
});

describe('@mentions', () => {
  // Short distinct names, so 5,000 of them fit in a prompt's 32,000 characters.
  const mentions = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `@u${(from + i).toString(36)}`).join(' ');

  test('11 distinct mentions are a 400 naming the limit, on every motion endpoint', async () => {
    const prompt = `a scene with ${mentions(11)}`;
    const create = expectOpenAi(await call(`${gw.url}/v1/video/create`, { key, json: { model: 'motion-2', prompt, images: [] } }), 400, 'too_many_mentions');
    expect(create.param).toBe('prompt');
    expect(create.message).toContain('10');
    const chat = expectOpenAi(
      await call(`${gw.url}/v1/chat/completions`, { key, json: { model: 'motion-2', messages: [{ role: 'user', content: prompt }] } }),
      400,
      'too_many_mentions',
    );
    expect(chat.param).toBe('messages[0].content');
    const form = new FormData();
    for (const [name, value] of Object.entries({ model: 'motion-2', prompt, seconds: '10', size: '720x1280' })) form.append(name, value);
    const res = await fetch(`${gw.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    expectOpenAi({ status: res.status, body: await res.json() }, 400, 'too_many_mentions');
  });

  test('repeats of one mention count once; a vidgen prompt may hold any number of @words', async () => {
    // Unknown characters: the lookup (one per distinct name) is what answers, not the limit.
    const repeated = expectOpenAi(
      await call(`${gw.url}/v1/video/create`, { key, json: { model: 'motion-2', prompt: '@who0 '.repeat(2000), images: [] } }),
      400,
      'unknown_character',
    );
    expect(repeated.message).toContain('@who0');
    const vidgen = await call(`${gw.url}/v1/video/create`, { key, json: { model: 'vidgen3', prompt: `tags ${mentions(50)}` } });
    expect(vidgen.status).toBe(200);
  });

  test('five prompts of 5,000 mentions each are refused at once and the API stays available', async () => {
    const floods = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        call(`${gw.url}/v1/video/create`, { key, json: { model: 'motion-2', prompt: mentions(5000, i * 5000), images: [] } }),
      ),
    );
    for (const res of floods) expectOpenAi(res, 400, 'too_many_mentions');
    const after = await call(`${gw.url}/v1/video/create`, { key, json: { model: 'motion-2', prompt: 'a fox in snow', images: [] } });
    expect(after.status).toBe(200);
  });
});

/** Key lookups the API has sent to the store so far. */
const keyLookups = () => store.count();

const randomKey = () => `sk-${Buffer.from(Array.from({ length: 32 }, () => Math.floor(Math.random() * 256))).toString('base64url')}`;

describe("failed key lookups (these tests run last: they exhaust 127.0.0.1's budget of failures)", () => {
  let revoked: string;

  test('a revoked key fails; the same wrong key sent 20 times costs the store one query', async () => {
    const issued = await gw.issueKeyWithId('to-revoke');
    expect((await call(`${gw.url}/v1/models`, { key: issued.key })).status).toBe(200);
    const del = await call(`${gw.url}/admin/keys/${issued.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(del.status).toBe(200);
    revoked = issued.key;
    expectOpenAi(await call(`${gw.url}/v1/models`, { key: revoked }), 401, 'invalid_api_key');

    const wrong = randomKey();
    const before = keyLookups();
    for (let i = 0; i < 20; i++) expectOpenAi(await call(`${gw.url}/v1/models`, { key: wrong }), 401, 'invalid_api_key');
    expect(keyLookups() - before).toBe(1);
  }, 60_000);

  test('a flood of random keys costs no query per request: after the budget, 429 with Retry-After, no lookup', async () => {
    const before = keyLookups();
    const statuses: number[] = [];
    for (let round = 0; round < 10; round++) {
      const batch = await Promise.all(Array.from({ length: 20 }, () => call(`${gw.url}/v1/video/query?id=x`, { key: randomKey() })));
      statuses.push(...batch.map((r) => r.status));
    }
    const lookups = keyLookups() - before;
    const unauthorized = statuses.filter((s) => s === 401).length;
    const limited = statuses.filter((s) => s === 429).length;
    expect(unauthorized + limited).toBe(200);
    // 30 a minute (9 were left after the test above, plus a token every 2 s): most of the flood never reaches the store.
    expect(limited).toBeGreaterThanOrEqual(170);
    expect(lookups).toBeLessThanOrEqual(unauthorized);
    expect(lookups).toBeLessThanOrEqual(30);
  }, 60_000);

  /** The first 429 of a few requests with random keys (a token may have come back since the flood: one every 2 s). */
  async function limited(send: () => ReturnType<typeof call>): ReturnType<typeof call> {
    for (let i = 0; i < 10; i++) {
      const res = await send();
      if (res.status !== 401) return res;
    }
    throw new Error('no 429 after 10 failures');
  }

  test("the 429 is in each family's shape, with Retry-After", async () => {
    const openAi = await limited(() => call(`${gw.url}/v1/models`, { key: randomKey() }));
    const error = expectOpenAi(openAi, 429, 'rate_limit_exceeded');
    expect(error.type).toBe('rate_limit_error');
    expect(error.message).toMatch(/failed authentications/);
    expect(Number(openAi.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    const anthropic = await limited(() => call(`${gw.url}/v1/messages`, { body: messagesText(''), headers: { ...json, 'x-api-key': randomKey() } }));
    expect(expectAnthropic(anthropic, 429, 'rate_limit_error').message).toMatch(/failed authentications/);
    expect(Number(anthropic.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    const motion = await limited(() => call(`${gw.url}/motion/v1/characters/char_abc`, { key: randomKey() }));
    expectOpenAi(motion, 429, 'rate_limit_exceeded');
  });

  test("a key that works is not limited by its address's failures; a revoked one stays refused", async () => {
    expect((await call(`${gw.url}/v1/models`, { key })).status).toBe(200);
    expect((await call(`${gw.url}/v1/messages`, { body: messagesText(''), headers: { ...json, 'x-api-key': key } })).status).toBe(200);
    expect([401, 429]).toContain((await call(`${gw.url}/v1/models`, { key: revoked })).status);
  });

  test('the admin token meets the same block: refused while the address is blocked, served once the failures stop (and a key issued then works)', async () => {
    await limited(() => call(`${gw.url}/v1/models`, { key: randomKey() }));
    const blocked = await call(`${gw.url}/admin/keys`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expectOpenAi(blocked, 429, 'rate_limit_exceeded');
    const wait = Number(blocked.headers.get('retry-after') ?? '2');
    await new Promise((r) => setTimeout(r, (wait + 1) * 1000));
    const fresh = await gw.issueKey('later');
    expect((await call(`${gw.url}/v1/models`, { key: fresh })).status).toBe(200);
  }, 30_000);
});
