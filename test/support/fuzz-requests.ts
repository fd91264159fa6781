/**
 * Generators of hostile requests for the fuzz suite (test/e2e/fuzz.test.ts): every endpoint of
 * the API, with generated JSON bodies, headers, paths and multipart forms. An arbitrary yields a
 * small descriptor (so a counterexample prints readably, even for a 150,000-deep array); build()
 * turns it into the bytes sent.
 */
import fc from 'fast-check';
import { THUMBNAIL_PNG } from '../../simulator/assets';

/** Every prompt the suite sends carries this, so the logs can be searched for prompts. */
export const PROMPT_MARK = 'zqfuzzprompt';
/** Wrong keys the suite presents (searched for in the logs too). */
export const WRONG_KEY = `sk-${'W'.repeat(20)}fuzzwrongkey${'w'.repeat(11)}`;

export type Auth = 'valid' | 'wrong' | 'none';

/** What the suite knows of the gateway under test, for paths and credentials. */
export interface FuzzContext {
  key: string;
  adminToken: string;
  /** A completed motion task of `key`. */
  taskId: string;
  /** A throwaway key's id (the admin routes' target). */
  spareKeyId: string;
  /** The path and query of a signed link to the task's video. */
  fileTarget: string;
}

export interface Endpoint {
  method: string;
  /** With {task}, {key}, {file} placeholders. */
  path: string;
  /** Who authenticates: keys (either header on the Anthropic-style routes), the admin token, or nobody. */
  auth: 'key' | 'anthropic' | 'admin' | 'none' | 'signed';
  body?: 'json' | 'multipart';
  /** A valid body to mutate (JSON endpoints). */
  base?: () => Record<string, unknown>;
  /** Paths into `base` that must keep their value (a streamed answer stays streamed, so the request ends at once). */
  keep?: string[];
}

const prompt = (text = 'a fox in the snow') => `${PROMPT_MARK} ${text}`;

/** Every route of src/api/app.ts and src/api/routes/*. */
export const ENDPOINTS: Endpoint[] = [
  { method: 'GET', path: '/healthz', auth: 'none' },
  { method: 'GET', path: '{file}', auth: 'signed' },
  { method: 'POST', path: '/admin/keys', auth: 'admin', body: 'json', base: () => ({ name: 'fuzz', quota: 10, rate_limit_rpm: 100 }) },
  { method: 'GET', path: '/admin/keys', auth: 'admin' },
  { method: 'GET', path: '/admin/keys/{key}', auth: 'admin' },
  { method: 'PATCH', path: '/admin/keys/{key}', auth: 'admin', body: 'json', base: () => ({ rate_limit_rpm: 1000, max_concurrent_tasks: 5 }) },
  { method: 'POST', path: '/admin/keys/{key}/quota', auth: 'admin', body: 'json', base: () => ({ delta: 5, reason: 'fuzz' }) },
  { method: 'GET', path: '/admin/keys/{key}/ledger?limit=10&offset=0', auth: 'admin' },
  { method: 'GET', path: '/admin/keys/{key}/usage?limit=10', auth: 'admin' },
  { method: 'GET', path: '/admin/keys/{key}/webhook', auth: 'admin' },
  { method: 'PUT', path: '/admin/keys/{key}/webhook', auth: 'admin', body: 'json', base: () => ({ url: 'https://hooks.example.com/fuzz' }) },
  { method: 'POST', path: '/admin/keys/{key}/webhook/rotate', auth: 'admin' },
  { method: 'GET', path: '/admin/keys/{key}/webhook/deliveries?limit=5', auth: 'admin' },
  { method: 'GET', path: '/admin/audit', auth: 'admin' },
  { method: 'GET', path: '/admin/channels', auth: 'admin' },
  { method: 'GET', path: '/admin/tasks?limit=5&status=completed', auth: 'admin' },
  {
    method: 'POST',
    path: '/v1/messages',
    auth: 'anthropic',
    body: 'json',
    base: () => ({ model: 'cm-haiku-4.5', max_tokens: 32, messages: [{ role: 'user', content: prompt() }] }),
  },
  {
    method: 'POST',
    path: '/v1/messages',
    auth: 'anthropic',
    body: 'json',
    base: () => ({
      model: 'cm-sonnet-4.5',
      max_tokens: 32,
      stream: true,
      system: prompt('be brief'),
      messages: [{ role: 'user', content: [{ type: 'text', text: prompt() }] }],
    }),
  },
  {
    method: 'POST',
    path: '/v1/messages/count_tokens',
    auth: 'anthropic',
    body: 'json',
    base: () => ({ model: 'cm-haiku-4.5', system: prompt('be brief'), messages: [{ role: 'user', content: prompt() }] }),
  },
  { method: 'GET', path: '/v1/models', auth: 'anthropic' },
  { method: 'GET', path: '/v1/models/gpt-4o-mini', auth: 'anthropic' },
  { method: 'POST', path: '/v1/video/create', auth: 'key', body: 'json', base: () => ({ model: 'motion-2', prompt: prompt(), images: [] }) },
  {
    method: 'POST',
    path: '/v1/video/create',
    auth: 'key',
    body: 'json',
    base: () => ({ model: 'vidgen3', prompt: prompt(), aspect_ratio: '16:9', images: [`data:image/png;base64,${THUMBNAIL_PNG.toString('base64')}`] }),
  },
  { method: 'GET', path: '/v1/video/query?id={task}', auth: 'key' },
  { method: 'POST', path: '/v1/videos', auth: 'key', body: 'multipart' },
  { method: 'GET', path: '/v1/videos/{task}', auth: 'key' },
  { method: 'GET', path: '/v1/videos/{task}/content', auth: 'key' },
  { method: 'GET', path: '/v1/videos/{task}/timeline', auth: 'key' },
  { method: 'GET', path: '/v1/videos?limit=2&order=asc', auth: 'key' },
  { method: 'POST', path: '/v1/videos/{task}/remix', auth: 'key', body: 'json', base: () => ({ prompt: prompt('now at night'), size: '720x1280' }) },
  {
    method: 'POST',
    path: '/v1/chat/completions',
    auth: 'key',
    body: 'json',
    base: () => ({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: prompt('be brief') },
        { role: 'user', content: prompt() },
      ],
      temperature: 0.5,
      max_tokens: 32,
    }),
  },
  {
    method: 'POST',
    path: '/v1/chat/completions',
    auth: 'key',
    body: 'json',
    base: () => ({ model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: prompt() }] }),
  },
  {
    method: 'POST',
    path: '/v1/chat/completions',
    auth: 'key',
    body: 'json',
    base: () => ({ model: 'motion-2', stream: true, messages: [{ role: 'user', content: prompt() }] }),
    keep: ['stream'],
  },
  {
    method: 'POST',
    path: '/v1/responses',
    auth: 'key',
    body: 'json',
    base: () => ({
      model: 'o3-pro',
      instructions: prompt('be brief'),
      input: [{ role: 'user', content: [{ type: 'input_text', text: prompt() }] }],
      max_output_tokens: 32,
    }),
  },
  { method: 'POST', path: '/v1/responses', auth: 'key', body: 'json', base: () => ({ model: 'gpt-4o-mini', stream: true, input: prompt() }) },
  { method: 'GET', path: '/v1/responses/resp_nobody', auth: 'key' },
  { method: 'GET', path: '/v1/billing', auth: 'key' },
  { method: 'GET', path: '/v1/billing/ledger?limit=5&kind=charge', auth: 'key' },
  { method: 'GET', path: '/v1/billing/spend?granularity=hour', auth: 'key' },
  { method: 'GET', path: '/v1/billing/usage?limit=5', auth: 'key' },
  { method: 'GET', path: '/v1/webhooks/deliveries?limit=5', auth: 'key' },
  { method: 'POST', path: '/motion/v1/characters', auth: 'key', body: 'json', base: () => ({ from_task: '{task}', timestamps: '0,2' }) },
  { method: 'GET', path: '/motion/v1/characters/char_nobody', auth: 'key' },
  { method: 'GET', path: '/motion/v1/characters?limit=5', auth: 'key' },
];

const JSON_ENDPOINTS = ENDPOINTS.filter((e) => e.body === 'json');

// ---------------------------------------------------------------------------------------------
// Hostile JSON values, as descriptors

export type Hostile =
  { kind: 'json'; value: unknown } | { kind: 'deep'; depth: number; open: '[' | '{' } | { kind: 'text'; text: string } | { kind: 'long'; length: number };

const RAW_VALUES = [
  '1e400',
  '-1e400',
  '1e-400',
  '-0',
  '123456789012345678901234567890',
  '9007199254740993',
  '-9223372036854775809',
  '0.1e99999',
  '"\\ud800"',
  '"\\udfff\\ud800x"',
  '"\\u0000"',
  '"a\\u0000b"',
  '"\\u202e\\u200b\\ufeff"',
  '"\u{1F600}\u0301"',
  '"\\/\\b\\f\\n\\r\\t"',
  '{"__proto__":{"admin":true,"stream":true,"max_tokens":-5}}',
  '{"constructor":{"prototype":{"polluted":1}}}',
  '{"prototype":null,"__proto__":null}',
  '[]',
  '{}',
  'null',
  'true',
  '""',
  '" "',
  '[null]',
  '[[]]',
  '{"":""}',
  '"NaN"',
  '"Infinity"',
  '"-1"',
  '"0x10"',
  '"1e3"',
  '"true"',
  '"data:image/png;base64,AAAA"',
  '"data:image/png;base64,"',
  '"http://127.0.0.1:1/a.png"',
  '"file:///etc/passwd"',
  '"javascript:alert(1)"',
  '"@a @b @c @d @e @f @g @h @i @j @k"',
  '"[sim:hang]"',
  '"{task}"',
  '"../../etc/passwd"',
  '"%E0%A4%A"',
  '"\\u0000\\u0001\\u001f"',
];

/** Strings that stores, file systems, loggers and re-encoders treat specially. */
const NASTY_STRINGS = [
  '"a\\u0000b"',
  '"\\u0000"',
  '"\\ud800"',
  '"x\\udc00y"',
  '"\\ufffe\\uffff"',
  '"\\u001b[31mred"',
  '"line\\nbreak\\r\\n"',
  '"\\u2028\\u2029"',
  '"%s%n%x"',
  '"${x}"',
  '"\\\\x00"',
  '"; drop table api_keys; --"',
  '"\\u0130\\u0131"',
  '" padded "',
  `"${'é'.repeat(300)}"`,
];

const nastyString: fc.Arbitrary<Hostile> = fc.constantFrom(...NASTY_STRINGS).map((text): Hostile => ({ kind: 'text', text }));

function valueAt(body: Record<string, unknown>, path: string): unknown {
  let node: unknown = body;
  for (const part of path.split('.')) node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[part] : undefined;
  return node;
}

const hostileValue: fc.Arbitrary<Hostile> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((value): Hostile => ({ kind: 'json', value })) },
  { weight: 3, arbitrary: nastyString },
  {
    weight: 3,
    arbitrary: fc
      .record({ depth: fc.constantFrom(63, 64, 65, 200, 5000, 20_000, 150_000, 150_000), open: fc.constantFrom('[' as const, '{' as const) })
      .map((d): Hostile => ({ kind: 'deep', ...d })),
  },
  { weight: 4, arbitrary: fc.constantFrom(...RAW_VALUES).map((text): Hostile => ({ kind: 'text', text })) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }).map((s): Hostile => ({ kind: 'text', text: JSON.stringify(s) })) },
  { weight: 1, arbitrary: fc.constantFrom(1000, 32_001, 100_000, 1_100_000).map((length): Hostile => ({ kind: 'long', length })) },
);

function hostileText(value: Hostile): string {
  switch (value.kind) {
    case 'json':
      return JSON.stringify(value.value) ?? 'null';
    case 'deep':
      return value.open === '[' ? '['.repeat(value.depth) + ']'.repeat(value.depth) : '{"a":'.repeat(value.depth) + '1' + '}'.repeat(value.depth);
    case 'text':
      return value.text;
    case 'long':
      return JSON.stringify(`${PROMPT_MARK} ${'x'.repeat(value.length)}`);
  }
}

/** Where in a base body a hostile value goes: an existing field, a nested one, or a new one. */
function mutationPaths(base: Record<string, unknown>): string[] {
  const paths = Object.keys(base);
  if (Array.isArray(base.messages))
    paths.push('messages.0.content', 'messages.0.role', 'messages.0', 'messages.1', 'messages.0.content.0.text', 'messages.0.extra');
  if (Array.isArray(base.images)) paths.push('images.0', 'images.5');
  paths.push('unknown_field', '__proto__', 'constructor', 'stream_options.include_usage');
  return paths;
}

const PLACEHOLDER = '"\u0000fuzz-placeholder\u0000"';

/** The base body's JSON text with the value at `path` replaced by raw JSON text. */
export function mutatedJson(base: Record<string, unknown>, path: string, raw: string): string {
  const marker = '\u0000fuzz-placeholder\u0000';
  const copy = JSON.parse(JSON.stringify(base)) as Record<string, unknown>;
  const parts = path.split('.');
  let node: Record<string, unknown> = copy;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (next === null || typeof next !== 'object') node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  // defineProperty: a plain assignment of '__proto__' would set the prototype, not a key.
  Object.defineProperty(node, parts.at(-1)!, { value: marker, enumerable: true, writable: true, configurable: true });
  // A function replacement: raw text may hold `$&` and the like.
  return JSON.stringify(copy).replace(PLACEHOLDER.replaceAll('\u0000', '\\u0000'), () => raw);
}

export type BodyDesc =
  | { kind: 'mutate'; path: string; value: Hostile }
  | { kind: 'garbage'; text: string }
  | { kind: 'invalid-utf8'; bytes: number[] }
  | { kind: 'oversize' }
  | { kind: 'duplicate-keys' };

const GARBAGE = [
  '',
  ' ',
  '{',
  '}',
  '[',
  '{"a":1,}',
  "{'a':1}",
  '{"a":NaN}',
  '{"a":undefined}',
  '{"a":1}{"b":2}',
  '{"a":1} x',
  '\ufeff{"a":1}',
  '/* c */{}',
  '"just a string"',
  '42',
  'null',
  'true',
  '{"a":"\\x41"}',
  '{"a":"\\u12"}',
  '{"a":"unterminated',
  '[1,2',
  '{"a":01}',
  '{"a":.5}',
  '{"a":+1}',
  '\u0000',
  '{"a":"\t"}',
  '{"a":1,"a":2}',
  'x'.repeat(5000),
];

const bodyDesc = (endpoint: Endpoint): fc.Arbitrary<BodyDesc> => {
  const base = endpoint.base!();
  const paths = mutationPaths(base).filter((p) => !endpoint.keep?.includes(p));
  // Fields that hold text reach stores and upstreams as text: they get the nasty strings often.
  const textPaths = paths.filter((p) => typeof valueAt(base, p) === 'string');
  return fc.oneof(
    { weight: 8, arbitrary: fc.record({ path: fc.constantFrom(...paths), value: hostileValue }).map((m): BodyDesc => ({ kind: 'mutate', ...m })) },
    {
      weight: textPaths.length > 0 ? 3 : 0,
      arbitrary: fc
        .record({ path: fc.constantFrom(...(textPaths.length > 0 ? textPaths : paths)), value: nastyString })
        .map((m): BodyDesc => ({ kind: 'mutate', ...m })),
    },
    { weight: 2, arbitrary: fc.oneof(fc.constantFrom(...GARBAGE), fc.string({ maxLength: 30 })).map((text): BodyDesc => ({ kind: 'garbage', text })) },
    {
      weight: 1,
      arbitrary: fc
        .array(fc.constantFrom(0x80, 0xbf, 0xc0, 0xc3, 0xe0, 0xed, 0xa0, 0xf0, 0xf5, 0xfe, 0xff, 0x00), { minLength: 1, maxLength: 4 })
        .map((bytes): BodyDesc => ({ kind: 'invalid-utf8', bytes })),
    },
    { weight: 1, arbitrary: fc.constantFrom<BodyDesc>({ kind: 'oversize' }, { kind: 'duplicate-keys' }) },
  );
};

/** Bytes of a JSON body for `endpoint` (oversize: just past `limitBytes`). */
export function jsonBodyBytes(endpoint: Endpoint, desc: BodyDesc, ctx: FuzzContext, limitBytes: number): Buffer {
  const base = resolveBase(endpoint, ctx);
  switch (desc.kind) {
    case 'mutate':
      return Buffer.from(mutatedJson(base, desc.path, hostileText(desc.value)), 'utf8');
    case 'garbage':
      return Buffer.from(desc.text, 'utf8');
    case 'invalid-utf8': {
      const text = JSON.stringify(base);
      const at = text.indexOf(PROMPT_MARK) >= 0 ? text.indexOf(PROMPT_MARK) : Math.floor(text.length / 2);
      return Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from(desc.bytes), Buffer.from(text.slice(at))]);
    }
    case 'oversize':
      return Buffer.from(JSON.stringify({ ...base, padding: `${PROMPT_MARK}${'p'.repeat(limitBytes)}` }));
    case 'duplicate-keys': {
      const text = JSON.stringify(base);
      return Buffer.from(`${text.slice(0, -1)},${text.slice(1)}`);
    }
  }
}

function resolveBase(endpoint: Endpoint, ctx: FuzzContext): Record<string, unknown> {
  return JSON.parse(JSON.stringify(endpoint.base!()).replaceAll('{task}', ctx.taskId)) as Record<string, unknown>;
}

// ---------------------------------------------------------------------------------------------
// Requests

export interface FuzzRequest {
  method: string;
  target: Buffer;
  headers: [string, string | Buffer][];
  body?: Buffer;
  /** A short description for failure messages. */
  label: string;
}

export function resolvePath(path: string, ctx: FuzzContext): string {
  return path.replaceAll('{task}', encodeURIComponent(ctx.taskId)).replaceAll('{key}', ctx.spareKeyId).replaceAll('{file}', ctx.fileTarget);
}

/** The credential headers of an endpoint for an auth choice (the Anthropic-style routes take x-api-key or Bearer). */
export function authHeaders(endpoint: Endpoint, auth: Auth, ctx: FuzzContext, viaXApiKey: boolean): [string, string][] {
  if (auth === 'none' || endpoint.auth === 'none' || endpoint.auth === 'signed') return [];
  const secret = endpoint.auth === 'admin' ? (auth === 'valid' ? ctx.adminToken : 'not-the-admin-token') : auth === 'valid' ? ctx.key : WRONG_KEY;
  if (endpoint.auth === 'anthropic' && viaXApiKey) return [['x-api-key', secret]];
  return [['Authorization', `Bearer ${secret}`]];
}

const endpointArb = fc.constantFrom(...ENDPOINTS);
const authArb = fc.constantFrom<Auth>('valid', 'valid', 'wrong', 'none');

/** Hostile JSON bodies on every JSON endpoint. */
export const jsonRequests = fc
  .constantFrom(...JSON_ENDPOINTS)
  .chain((endpoint) => fc.record({ endpoint: fc.constant(endpoint), body: bodyDesc(endpoint), auth: authArb, xApiKey: fc.boolean() }));

export type JsonRequestDesc = { endpoint: Endpoint; body: BodyDesc; auth: Auth; xApiKey: boolean };

export function buildJsonRequest(d: JsonRequestDesc, ctx: FuzzContext, limitBytes: number): FuzzRequest {
  const body = jsonBodyBytes(d.endpoint, d.body, ctx, limitBytes);
  return {
    method: d.endpoint.method,
    target: Buffer.from(resolvePath(d.endpoint.path, ctx)),
    headers: [
      ['Host', '127.0.0.1'],
      ['Content-Type', 'application/json'],
      ['Content-Length', String(body.length)],
      ...authHeaders(d.endpoint, d.auth, ctx, d.xApiKey),
    ],
    body,
    label: `${d.endpoint.method} ${d.endpoint.path} auth=${d.auth} body=${summarise(d.body)}`,
  };
}

// Headers ---------------------------------------------------------------------------------------

export type HeaderMod =
  | { kind: 'content-type'; value: string }
  | {
      kind: 'auth';
      variant:
        | 'duplicate-valid-first'
        | 'duplicate-wrong-first'
        | 'lowercase-bearer'
        | 'no-scheme'
        | 'basic'
        | 'empty-bearer'
        | 'huge'
        | 'obs-text'
        | 'x-api-key-twice'
        | 'both-headers-mixed'
        | 'tab-separated';
    }
  | { kind: 'huge'; name: string; size: number }
  | { kind: 'request-id'; value: string }
  | { kind: 'range'; value: string }
  | { kind: 'framing'; variant: 'chunked' | 'chunked-bad' | 'short-length' | 'no-length' | 'expect-continue' | 'te-and-cl' }
  | { kind: 'drop-host' }
  | { kind: 'many'; count: number };

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'APPLICATION/JSON',
  'application/json;;;',
  'application/json; boundary=x',
  'text/plain',
  'text/json',
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  'multipart/form-data; boundary=',
  'multipart/form-data; boundary=zz',
  'application/json, text/plain',
  '',
  'application/vnd.api+json',
  '*/*',
  'application/*',
  'application/json\t',
  `application/json; x=${'y'.repeat(3000)}`,
  'application/jsonp',
  'application/json5',
];

const headerMod: fc.Arbitrary<HeaderMod> = fc.oneof(
  fc.constantFrom(...CONTENT_TYPES).map((value): HeaderMod => ({ kind: 'content-type', value })),
  fc
    .constantFrom(
      'duplicate-valid-first',
      'duplicate-wrong-first',
      'lowercase-bearer',
      'no-scheme',
      'basic',
      'empty-bearer',
      'huge',
      'obs-text',
      'x-api-key-twice',
      'both-headers-mixed',
      'tab-separated' as const,
    )
    .map((variant): HeaderMod => ({ kind: 'auth', variant: variant as Extract<HeaderMod, { kind: 'auth' }>['variant'] })),
  fc
    .record({
      name: fc.constantFrom('X-Big', 'Cookie', 'Anthropic-Beta', 'Idempotency-Key', 'User-Agent', 'Accept'),
      size: fc.constantFrom(1000, 8000, 15_000, 40_000),
    })
    .map((h): HeaderMod => ({ kind: 'huge', ...h })),
  fc.constantFrom('ok-id', 'x'.repeat(129), 'a b', 'é', '../../x', '<script>', 'req:1.2-3', '').map((value): HeaderMod => ({ kind: 'request-id', value })),
  fc
    .constantFrom('bytes=0-0', 'bytes=-1', 'bytes=5-1', 'bytes=0-99999999999999999999', 'bytes=a-b', 'bytes=0-1,2-3', 'items=0-1', 'bytes=')
    .map((value): HeaderMod => ({ kind: 'range', value })),
  fc
    .constantFrom('chunked', 'chunked-bad', 'short-length', 'no-length', 'expect-continue', 'te-and-cl' as const)
    .map((variant): HeaderMod => ({ kind: 'framing', variant: variant as Extract<HeaderMod, { kind: 'framing' }>['variant'] })),
  fc.constant<HeaderMod>({ kind: 'drop-host' }),
  fc.constantFrom(50, 150).map((count): HeaderMod => ({ kind: 'many', count })),
);

export const headerRequests = fc.record({ endpoint: endpointArb, mods: fc.array(headerMod, { minLength: 1, maxLength: 3 }), auth: authArb });
export type HeaderRequestDesc = { endpoint: Endpoint; mods: HeaderMod[]; auth: Auth };

export function buildHeaderRequest(d: HeaderRequestDesc, ctx: FuzzContext): FuzzRequest {
  let headers: [string, string | Buffer][] = authHeaders(d.endpoint, d.auth, ctx, false);
  let body: Buffer | undefined = d.endpoint.body === 'json' ? Buffer.from(JSON.stringify(resolveBase(d.endpoint, ctx))) : undefined;
  let contentType = d.endpoint.body === 'json' ? 'application/json' : undefined;
  const extra: [string, string | Buffer][] = [];
  let framing: Extract<HeaderMod, { kind: 'framing' }>['variant'] | null = null;
  let host = true;
  const secret = d.endpoint.auth === 'admin' ? ctx.adminToken : ctx.key;
  for (const mod of d.mods) {
    switch (mod.kind) {
      case 'content-type':
        contentType = mod.value;
        break;
      case 'auth':
        headers = authVariant(mod.variant, secret);
        break;
      case 'huge':
        extra.push([mod.name, 'h'.repeat(mod.size)]);
        break;
      case 'request-id':
        extra.push(['X-Request-Id', Buffer.from(mod.value, 'utf8')]);
        break;
      case 'range':
        extra.push(['Range', mod.value]);
        break;
      case 'framing':
        framing = mod.variant;
        break;
      case 'drop-host':
        host = false;
        break;
      case 'many':
        for (let i = 0; i < mod.count; i++) extra.push([`X-Many-${i}`, String(i)]);
        break;
    }
  }
  if (d.endpoint.body === 'multipart') {
    const form = multipartBytes(baseMultipart('motion'), ctx);
    body = form.body;
    contentType ??= form.contentType;
  }
  const all: [string, string | Buffer][] = [];
  if (host) all.push(['Host', '127.0.0.1']);
  if (contentType !== undefined) all.push(['Content-Type', contentType]);
  all.push(...headers, ...extra);
  const target = Buffer.from(resolvePath(d.endpoint.path, ctx));
  const label = `${d.endpoint.method} ${d.endpoint.path} auth=${d.auth} headers=${JSON.stringify(d.mods).slice(0, 300)}`;
  return { method: d.endpoint.method, target, headers: [...all, ...framed(framing, body)], body: framedBody(framing, body), label };
}

function authVariant(variant: Extract<HeaderMod, { kind: 'auth' }>['variant'], secret: string): [string, string | Buffer][] {
  switch (variant) {
    case 'duplicate-valid-first':
      return [
        ['Authorization', `Bearer ${secret}`],
        ['Authorization', `Bearer ${WRONG_KEY}`],
      ];
    case 'duplicate-wrong-first':
      return [
        ['Authorization', `Bearer ${WRONG_KEY}`],
        ['Authorization', `Bearer ${secret}`],
      ];
    case 'lowercase-bearer':
      return [['authorization', `bearer ${secret}`]];
    case 'no-scheme':
      return [['Authorization', secret]];
    case 'basic':
      return [['Authorization', `Basic ${Buffer.from(`user:${WRONG_KEY}`).toString('base64')}`]];
    case 'empty-bearer':
      return [['Authorization', 'Bearer ']];
    case 'huge':
      return [['Authorization', `Bearer sk-${'k'.repeat(12_000)}`]];
    case 'obs-text':
      return [['Authorization', Buffer.concat([Buffer.from('Bearer sk-'), Buffer.from([0xff, 0xfe, 0x80]), Buffer.from('x'.repeat(40))])]];
    case 'x-api-key-twice':
      return [
        ['x-api-key', secret],
        ['x-api-key', WRONG_KEY],
      ];
    case 'both-headers-mixed':
      return [
        ['x-api-key', WRONG_KEY],
        ['Authorization', `Bearer ${secret}`],
      ];
    case 'tab-separated':
      return [['Authorization', `Bearer\t${secret}`]];
  }
}

/** Framing headers (content-length is added by the sender unless framing says otherwise). */
function framed(framing: Extract<HeaderMod, { kind: 'framing' }>['variant'] | null, body: Buffer | undefined): [string, string][] {
  const length = body?.length ?? 0;
  switch (framing) {
    case null:
      return body ? [['Content-Length', String(length)]] : [];
    case 'chunked':
    case 'chunked-bad':
      return [['Transfer-Encoding', 'chunked']];
    case 'short-length':
      return [['Content-Length', String(Math.max(0, length - 3))]];
    case 'no-length':
      return [];
    case 'expect-continue':
      return [
        ['Expect', '100-continue'],
        ['Content-Length', String(length)],
      ];
    case 'te-and-cl':
      return [
        ['Transfer-Encoding', 'chunked'],
        ['Content-Length', String(length)],
      ];
  }
}

function framedBody(framing: Extract<HeaderMod, { kind: 'framing' }>['variant'] | null, body: Buffer | undefined): Buffer | undefined {
  if (!body) return framing === 'chunked' || framing === 'chunked-bad' || framing === 'te-and-cl' ? Buffer.from('0\r\n\r\n') : undefined;
  if (framing === 'chunked' || framing === 'te-and-cl')
    return Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]);
  if (framing === 'chunked-bad') return Buffer.concat([Buffer.from('zz\r\n'), body, Buffer.from('\r\n0\r\n\r\n')]);
  return body;
}

// Paths -----------------------------------------------------------------------------------------

const SEGMENTS = [
  '%',
  '%E0%A4%A',
  '%ZZ',
  '%00',
  '%2e%2e',
  '..',
  '.',
  '%2F',
  '',
  'ä',
  '%C3%A4',
  '%F0%9F%98%80',
  '%C0%AF',
  '%ED%A0%80',
  '~',
  ';x=1',
  '*',
  '%25',
  'a'.repeat(3000),
  'vidgen3:1-abc',
  'motion-2:1795335070122-y1wegyp0ng',
  'video_0123456789abcdef0123456789abcdef',
  'char_x',
  'key_000000000000000000000000',
  '%20',
  '+',
  'con',
  'null',
];
const QUERIES = [
  '',
  '?',
  '?id=a&id=b',
  '?id[]=a',
  '?id[a]=b',
  '?limit=1e309',
  '?limit=-1',
  '?limit=0',
  '?limit=1.5',
  '?offset=99999999999999999999',
  '?x=%',
  '?x=%E0%A4%A',
  '?expires=NaN&signature=',
  '?expires=99999999999&signature=aa',
  '?__proto__[x]=1',
  '?constructor=1',
  '?limit=10&limit=20',
  `?q=${'q'.repeat(4000)}`,
  '?a=%00',
];
const RAW_BYTES = [Buffer.from([0xff]), Buffer.from([0xc3, 0xa4]), Buffer.from([0xe2, 0x80, 0xae]), Buffer.from([0x7f])];

export type PathDesc = {
  method: string;
  endpoint: Endpoint;
  /** Replace the last segment, append one, or prefix dot segments. */
  how: 'replace-last' | 'append' | 'dots' | 'double-slash' | 'raw-byte' | 'absolute-form' | 'as-is';
  segment: string;
  rawByte: number;
  query: string;
  auth: Auth;
};

export const pathRequests = fc.record({
  method: fc.constantFrom('GET', 'GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
  endpoint: endpointArb,
  how: fc.constantFrom('replace-last', 'append', 'dots', 'double-slash', 'raw-byte', 'absolute-form', 'as-is' as const) as fc.Arbitrary<PathDesc['how']>,
  segment: fc.oneof(fc.constantFrom(...SEGMENTS), fc.webSegment()),
  rawByte: fc.integer({ min: 0, max: RAW_BYTES.length - 1 }),
  query: fc.oneof(
    fc.constantFrom(...QUERIES),
    fc.webQueryParameters().map((q) => `?${q}`),
  ),
  auth: authArb,
});

export function buildPathRequest(d: PathDesc, ctx: FuzzContext): FuzzRequest {
  const path = resolvePath(d.endpoint.path, ctx).split('?')[0]!;
  let target: Buffer;
  switch (d.how) {
    case 'replace-last':
      target = Buffer.from(`${path.slice(0, path.lastIndexOf('/') + 1)}${d.segment}${d.query}`, 'utf8');
      break;
    case 'append':
      target = Buffer.from(`${path}/${d.segment}${d.query}`, 'utf8');
      break;
    case 'dots':
      target = Buffer.from(`/v1/../admin/./${d.segment}/..${path}${d.query}`, 'utf8');
      break;
    case 'double-slash':
      target = Buffer.from(`/${path}//${d.segment}${d.query}`, 'utf8');
      break;
    case 'raw-byte':
      target = Buffer.concat([Buffer.from(path), RAW_BYTES[d.rawByte]!, Buffer.from(d.query)]);
      break;
    case 'absolute-form':
      target = Buffer.from(`http://127.0.0.1${path}${d.query}`, 'utf8');
      break;
    case 'as-is':
      target = Buffer.from(`${path}${d.query}`, 'utf8');
      break;
  }
  const headers: [string, string | Buffer][] = [['Host', '127.0.0.1'], ...authHeaders(d.endpoint, d.auth, ctx, false)];
  let body: Buffer | undefined;
  if (d.method !== 'GET' && d.method !== 'HEAD' && d.endpoint.body === 'json') {
    body = Buffer.from(JSON.stringify(resolveBase(d.endpoint, ctx)));
    headers.push(['Content-Type', 'application/json'], ['Content-Length', String(body.length)]);
  }
  return { method: d.method, target, headers, body, label: `${d.method} ${target.toString('latin1').slice(0, 200)} auth=${d.auth}` };
}

// Multipart -------------------------------------------------------------------------------------

export interface Part {
  name: string;
  filename?: string;
  contentType?: string;
  data: string | Buffer;
}

export function baseMultipart(family: 'motion' | 'vidgen'): Part[] {
  return family === 'motion'
    ? [
        { name: 'model', data: 'motion-2' },
        { name: 'prompt', data: prompt() },
        { name: 'seconds', data: '10' },
        { name: 'size', data: '720x1280' },
      ]
    : [
        { name: 'model', data: 'vidgen_3_1' },
        { name: 'prompt', data: prompt() },
        { name: 'seconds', data: '8' },
        { name: 'size', data: '16x9' },
        { name: 'input_reference', filename: 'ref.png', contentType: 'image/png', data: THUMBNAIL_PNG },
      ];
}

export type FormMod =
  | { kind: 'duplicate'; field: number }
  | { kind: 'huge-name'; size: number }
  | { kind: 'unknown-field' }
  | { kind: 'field-as-file'; field: number }
  | { kind: 'reference-as-text' }
  | { kind: 'reference-file'; content: 'png' | 'garbage' | 'empty' | 'big'; filename: string; contentType: string }
  | { kind: 'many-fields'; count: number }
  | { kind: 'many-files'; count: number }
  | { kind: 'drop'; field: number }
  | { kind: 'metadata'; value: Hostile }
  | { kind: 'character-create'; value: Hostile }
  | { kind: 'value'; field: number; value: string }
  | { kind: 'no-name' }
  | { kind: 'bare-part' };

export type Framing =
  'ok' | 'missing-boundary' | 'wrong-boundary' | 'long-boundary' | 'quoted-boundary' | 'unterminated' | 'lf-only' | 'preamble' | 'empty-body';

const formMod: fc.Arbitrary<FormMod> = fc.oneof(
  fc.nat({ max: 4 }).map((field): FormMod => ({ kind: 'duplicate', field })),
  fc.constantFrom(200, 5000, 200_000).map((size): FormMod => ({ kind: 'huge-name', size })),
  fc.constant<FormMod>({ kind: 'unknown-field' }),
  fc.nat({ max: 4 }).map((field): FormMod => ({ kind: 'field-as-file', field })),
  fc.constant<FormMod>({ kind: 'reference-as-text' }),
  fc
    .record({
      content: fc.constantFrom('png' as const, 'garbage' as const, 'empty' as const, 'big' as const),
      filename: fc.constantFrom('ref.png', '../../../etc/passwd', 'a\u0000b.png', '', 'x'.repeat(1000), 'é.png', 'a"b.png'),
      contentType: fc.constantFrom('image/png', 'text/plain', 'application/octet-stream', '', 'image/png; charset=utf-8'),
    })
    .map((f): FormMod => ({ kind: 'reference-file', ...f })),
  fc.constantFrom(41, 200).map((count): FormMod => ({ kind: 'many-fields', count })),
  fc.constantFrom(2, 5).map((count): FormMod => ({ kind: 'many-files', count })),
  fc.nat({ max: 4 }).map((field): FormMod => ({ kind: 'drop', field })),
  hostileValue.map((value): FormMod => ({ kind: 'metadata', value })),
  hostileValue.map((value): FormMod => ({ kind: 'character-create', value })),
  fc
    .record({
      field: fc.nat({ max: 4 }),
      value: fc.oneof(
        fc.string({ maxLength: 20 }),
        fc.constantFrom('', ' ', '1e400', '-1', 'true', 'motion-2-pro', 'vidgen3', '1080x1080', '25', `@a ${'@b'.repeat(20)}`, 'x'.repeat(40_000)),
      ),
    })
    .map((v): FormMod => ({ kind: 'value', ...v })),
  fc.constant<FormMod>({ kind: 'no-name' }),
  fc.constant<FormMod>({ kind: 'bare-part' }),
);

const POST_ENDPOINTS = ENDPOINTS.filter((e) => e.method === 'POST' && e.body !== 'multipart');

export const multipartRequests = fc.record({
  /** Mostly /v1/videos; sometimes a JSON endpoint gets the form instead. */
  endpoint: fc.oneof(
    { weight: 4, arbitrary: fc.constant(ENDPOINTS.find((e) => e.body === 'multipart')!) },
    { weight: 1, arbitrary: fc.constantFrom(...POST_ENDPOINTS) },
  ),
  family: fc.constantFrom('motion' as const, 'vidgen' as const),
  mods: fc.array(formMod, { maxLength: 3 }),
  framing: fc.constantFrom<Framing>(
    'ok',
    'ok',
    'ok',
    'missing-boundary',
    'wrong-boundary',
    'long-boundary',
    'quoted-boundary',
    'unterminated',
    'lf-only',
    'preamble',
    'empty-body',
  ),
  auth: authArb,
});
export type MultipartDesc = { endpoint: Endpoint; family: 'motion' | 'vidgen'; mods: FormMod[]; framing: Framing; auth: Auth };

/** A form's bytes with a proper boundary. */
export function multipartBytes(parts: Part[], _ctx: FuzzContext, framing: Framing = 'ok'): { body: Buffer; contentType: string } {
  const boundary = framing === 'long-boundary' ? `b${'-'.repeat(100)}x` : '----fuzzboundary7MA4YWxkTrZu0gW';
  const eol = framing === 'lf-only' ? '\n' : '\r\n';
  const chunks: Buffer[] = [];
  if (framing === 'preamble') chunks.push(Buffer.from(`preamble garbage${eol}`));
  for (const part of parts) {
    if (part.name === '\u0000bare') {
      chunks.push(Buffer.from(`--${boundary}${eol}${eol}`), Buffer.from(part.data), Buffer.from(eol));
      continue;
    }
    const disposition =
      part.name === '\u0000noname' ? 'form-data' : `form-data; name="${part.name}"${part.filename !== undefined ? `; filename="${part.filename}"` : ''}`;
    chunks.push(Buffer.from(`--${boundary}${eol}Content-Disposition: ${disposition}${eol}`));
    if (part.contentType !== undefined) chunks.push(Buffer.from(`Content-Type: ${part.contentType}${eol}`));
    chunks.push(Buffer.from(eol), Buffer.isBuffer(part.data) ? part.data : Buffer.from(part.data, 'utf8'), Buffer.from(eol));
  }
  if (framing !== 'unterminated') chunks.push(Buffer.from(`--${boundary}--${eol}`));
  const body = framing === 'empty-body' ? Buffer.alloc(0) : Buffer.concat(chunks);
  const contentType =
    framing === 'missing-boundary'
      ? 'multipart/form-data'
      : framing === 'wrong-boundary'
        ? 'multipart/form-data; boundary=not-the-boundary'
        : framing === 'quoted-boundary'
          ? `multipart/form-data; boundary="${boundary}"`
          : `multipart/form-data; boundary=${boundary}`;
  return { body, contentType };
}

export function buildMultipartRequest(d: MultipartDesc, ctx: FuzzContext): FuzzRequest {
  let parts = baseMultipart(d.family);
  for (const mod of d.mods) parts = applyFormMod(parts, mod);
  const { body, contentType } = multipartBytes(parts, ctx, d.framing);
  return {
    method: 'POST',
    target: Buffer.from(resolvePath(d.endpoint.path, ctx)),
    headers: [['Host', '127.0.0.1'], ['Content-Type', contentType], ['Content-Length', String(body.length)], ...authHeaders(d.endpoint, d.auth, ctx, false)],
    body,
    label: `POST ${d.endpoint.path} auth=${d.auth} family=${d.family} framing=${d.framing} mods=${JSON.stringify(d.mods, (_k, v: unknown) => (typeof v === 'string' && v.length > 60 ? `${v.slice(0, 20)}…(${v.length})` : v)).slice(0, 400)}`,
  };
}

function applyFormMod(parts: Part[], mod: FormMod): Part[] {
  const at = (i: number) => parts[i % parts.length]!;
  switch (mod.kind) {
    case 'duplicate':
      return [...parts, { ...at(mod.field) }];
    case 'huge-name':
      return [...parts, { name: 'n'.repeat(mod.size), data: 'x' }];
    case 'unknown-field':
      return [...parts, { name: 'unknown_field', data: 'x' }];
    case 'field-as-file':
      return parts.map((p, i) => (i === mod.field % parts.length ? { ...p, filename: 'field.txt', contentType: 'text/plain' } : p));
    case 'reference-as-text':
      return [...parts.filter((p) => p.name !== 'input_reference'), { name: 'input_reference', data: 'https://example.com/a.png' }];
    case 'reference-file': {
      const data =
        mod.content === 'png'
          ? THUMBNAIL_PNG
          : mod.content === 'garbage'
            ? Buffer.from('GIF89a not really')
            : mod.content === 'empty'
              ? Buffer.alloc(0)
              : Buffer.alloc(600 * 1024, 7);
      return [...parts.filter((p) => p.name !== 'input_reference'), { name: 'input_reference', filename: mod.filename, contentType: mod.contentType, data }];
    }
    case 'many-fields':
      return [...parts, ...Array.from({ length: mod.count }, (_, i) => ({ name: `f${i}`, data: 'v' }))];
    case 'many-files':
      return [
        ...parts,
        ...Array.from({ length: mod.count }, (_, i) => ({ name: `file${i}`, filename: `f${i}.png`, contentType: 'image/png', data: THUMBNAIL_PNG })),
      ];
    case 'drop':
      return parts.filter((_, i) => i !== mod.field % parts.length);
    case 'metadata':
      return [...parts, { name: 'metadata', data: hostileText(mod.value) }];
    case 'character-create':
      return [...parts, { name: 'character_create', data: hostileText(mod.value) }];
    case 'value':
      return parts.map((p, i) => (i === mod.field % parts.length && !Buffer.isBuffer(p.data) ? { ...p, data: mod.value } : p));
    case 'no-name':
      return [...parts, { name: '\u0000noname', data: 'x' }];
    case 'bare-part':
      return [...parts, { name: '\u0000bare', data: 'x' }];
  }
}

function summarise(body: BodyDesc): string {
  const text = JSON.stringify(body, (_k, v: unknown) => (typeof v === 'string' && v.length > 80 ? `${v.slice(0, 40)}…(${v.length})` : v));
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}
