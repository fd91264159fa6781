/**
 * The console's edge in process (issue 21): sign-in and its cookie, the CSRF rule of
 * cookie-authenticated requests, the session's roles on key and admin routes, the security
 * headers, and the static serving of the built app (a folder of its own here, not the build).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ADMIN_TOKEN, startRouteApp, type RouteApp } from './harness';

let app: RouteApp;
let key: string;
let dir: string;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-console-'));
  fs.mkdirSync(path.join(dir, 'assets'));
  fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>console</title><script type="module" src="/console/assets/app-abc123.js"></script>');
  fs.writeFileSync(path.join(dir, 'assets', 'app-abc123.js'), 'console.log(1);');
  fs.writeFileSync(path.join(dir, 'assets', 'app-abc123.css'), 'body{}');
  fs.writeFileSync(path.join(dir, 'secret.txt'), 'outside the assets folder');
  app = await startRouteApp({}, { consoleDir: dir });
  key = await app.issueKey(1000);
}, 60_000);

afterAll(async () => {
  await app?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
  text: string;
}

async function call(method: string, target: string, opts: { headers?: Record<string, string>; body?: unknown } = {}): Promise<Answer> {
  const res = await fetch(`${app.url}${target}`, {
    method,
    headers: { ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }), ...opts.headers },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    redirect: 'manual',
  });
  const text = method === 'HEAD' ? '' : await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = {};
  }
  return { status: res.status, headers: res.headers, body, text };
}

async function signIn(credential: Record<string, string>, headers: Record<string, string> = {}): Promise<{ cookie: string; csrf: string; answer: Answer }> {
  const answer = await call('POST', '/console/api/session', { body: credential, headers });
  expect(answer.status).toBe(201);
  const setCookie = answer.headers.get('set-cookie') ?? '';
  const cookie = setCookie.split(';')[0] ?? '';
  return { cookie, csrf: String(answer.body.csrf_token), answer };
}

describe('sign-in', () => {
  test('a key signs in: the cookie is HttpOnly, SameSite=Strict, Path=/, no Max-Age and no Secure over http', async () => {
    const { answer, cookie } = await signIn({ api_key: key });
    const setCookie = answer.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/^gw_session=[A-Za-z0-9_-]{43}; /);
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Strict');
    expect(setCookie).toContain('Path=/');
    expect(setCookie).not.toContain('Secure');
    expect(setCookie).not.toContain('Max-Age');
    expect(answer.body).toEqual({
      object: 'console.session',
      role: 'key',
      key: { id: expect.stringMatching(/^key_/), name: 'route-test', key_hint: expect.stringMatching(/^sk-\.\.\./) },
      csrf_token: expect.any(String),
      expires_at: expect.any(Number),
      temporal_ui_url: null,
    });
    const now = Math.floor(Date.now() / 1000);
    expect(answer.body.expires_at).toBeGreaterThan(now + 29 * 60);
    expect(answer.body.expires_at).toBeLessThanOrEqual(now + 31 * 60);
    // Only the hash of the id is stored.
    const rows = await app.db.query<{ id_hash: string }>('select id_hash from console_sessions');
    expect(rows.map((r) => r.id_hash)).not.toContain(cookie.slice('gw_session='.length));
  });

  test('a wrong key or admin token is a 401 in the OpenAI shape and sets no cookie', async () => {
    for (const credential of [{ api_key: 'sk-nope' }, { admin_token: 'nope' }]) {
      const answer = await call('POST', '/console/api/session', { body: credential });
      expect(answer.status).toBe(401);
      expect(answer.body.error).toEqual(expect.objectContaining({ type: 'invalid_request_error' }));
      expect(answer.headers.get('set-cookie')).toBeNull();
    }
  });

  test('a body with both, neither or another field is a 400', async () => {
    for (const body of [{}, { api_key: key, admin_token: ADMIN_TOKEN }, { password: 'x' }, { api_key: 5 }]) {
      expect((await call('POST', '/console/api/session', { body })).status).toBe(400);
    }
  });

  test('GET answers the same session (the csrf token again); without a cookie it is 401', async () => {
    const { cookie, csrf } = await signIn({ api_key: key });
    const again = await call('GET', '/console/api/session', { headers: { cookie } });
    expect(again.status).toBe(200);
    expect(again.body.csrf_token).toBe(csrf);
    expect((await call('GET', '/console/api/session')).status).toBe(401);
    expect((await call('GET', '/console/api/session', { headers: { cookie: 'gw_session=unknown' } })).status).toBe(401);
  });

  test('an operator signs in with the admin token and gets the Temporal UI link', async () => {
    const { answer } = await signIn({ admin_token: ADMIN_TOKEN });
    expect(answer.body).toEqual(expect.objectContaining({ role: 'admin', key: null }));
    // The harness runs in embedded mode (no TEMPORAL_ADDRESS): the dev server's UI.
    expect(answer.body.temporal_ui_url).toBe('http://localhost:8233');
  });
});

describe('cookie authentication', () => {
  test('a key session reads /v1 and /motion/v1 and /v1/models with the cookie alone', async () => {
    const { cookie } = await signIn({ api_key: key });
    const billing = await call('GET', '/v1/billing', { headers: { cookie } });
    expect(billing.status).toBe(200);
    expect(billing.body.balance).toBe(1000);
    expect((await call('GET', '/v1/models', { headers: { cookie } })).status).toBe(200);
  });

  test('a state-changing request needs the csrf token, and a foreign Origin is refused', async () => {
    const { cookie, csrf } = await signIn({ api_key: key });
    const create = { model: 'vidgen3', prompt: 'a red fox running through snow' };
    const noToken = await call('POST', '/v1/video/create', { headers: { cookie }, body: create });
    expect(noToken.status).toBe(403);
    expect((noToken.body.error as Record<string, unknown>).code).toBe('csrf_failed');
    const wrongToken = await call('POST', '/v1/video/create', { headers: { cookie, 'x-csrf-token': `${csrf}x` }, body: create });
    expect((wrongToken.body.error as Record<string, unknown>).code).toBe('csrf_failed');
    const foreign = await call('POST', '/v1/video/create', { headers: { cookie, 'x-csrf-token': csrf, origin: 'https://evil.example' }, body: create });
    expect(foreign.status).toBe(403);
    expect((foreign.body.error as Record<string, unknown>).code).toBe('csrf_failed');
    const own = await call('POST', '/v1/video/create', { headers: { cookie, 'x-csrf-token': csrf, origin: app.url }, body: create });
    expect(own.status).toBe(200);
  });

  test('a bearer request is unaffected by the rule, and a header wins over a cookie', async () => {
    const { cookie } = await signIn({ admin_token: ADMIN_TOKEN });
    const res = await call('POST', '/v1/video/create', {
      headers: { cookie, authorization: `Bearer ${key}` },
      body: { model: 'vidgen3', prompt: 'a red fox running through snow' },
    });
    expect(res.status).toBe(200);
  });

  test('a key session on an admin route is 403 admin_session_required; an admin session on key routes is 401', async () => {
    const keySession = await signIn({ api_key: key });
    const refused = await call('GET', '/admin/keys', { headers: { cookie: keySession.cookie } });
    expect(refused.status).toBe(403);
    expect((refused.body.error as Record<string, unknown>).code).toBe('admin_session_required');
    const admin = await signIn({ admin_token: ADMIN_TOKEN });
    expect((await call('GET', '/admin/keys', { headers: { cookie: admin.cookie } })).status).toBe(200);
    expect((await call('GET', '/v1/billing', { headers: { cookie: admin.cookie } })).status).toBe(401);
  });

  test('sign-out needs the token, deletes the session and clears the cookie', async () => {
    const { cookie, csrf } = await signIn({ api_key: key });
    expect((await call('DELETE', '/console/api/session', { headers: { cookie } })).status).toBe(403);
    const out = await call('DELETE', '/console/api/session', { headers: { cookie, 'x-csrf-token': csrf } });
    expect(out.status).toBe(200);
    expect(out.body).toEqual({ object: 'console.session.deleted', deleted: true });
    expect(out.headers.get('set-cookie')).toContain('Max-Age=0');
    expect((await call('GET', '/v1/billing', { headers: { cookie } })).status).toBe(401);
  });

  test('Secure is set behind a trusted proxy that says https, not for an untrusted X-Forwarded-Proto', async () => {
    const untrusted = await signIn({ api_key: key }, { 'x-forwarded-proto': 'https' });
    expect(untrusted.answer.headers.get('set-cookie')).not.toContain('Secure');
    const trusted = await startRouteApp({ TRUST_PROXY: 'true' }, { consoleDir: dir });
    try {
      const res = await fetch(`${trusted.url}/console/api/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-proto': 'https' },
        body: JSON.stringify({ admin_token: ADMIN_TOKEN }),
      });
      expect(res.status).toBe(201);
      expect(res.headers.get('set-cookie')).toMatch(/; Secure$/);
    } finally {
      await trusted.close();
    }
  });
});

describe('static serving', () => {
  const securityHeaders = (a: Answer) => {
    expect(a.headers.get('content-security-policy')).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob: http://localhost:0; media-src 'self' blob: http://localhost:0; " +
        "connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    expect(a.headers.get('x-content-type-options')).toBe('nosniff');
    expect(a.headers.get('referrer-policy')).toBe('no-referrer');
    expect(a.headers.get('x-frame-options')).toBe('DENY');
    expect(a.headers.get('cross-origin-opener-policy')).toBe('same-origin');
  };

  test('/console and app routes answer index.html, never cached, with the security headers', async () => {
    for (const target of ['/console', '/console/', '/console/videos/video_123', '/console/admin/keys']) {
      const page = await call('GET', target);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(page.headers.get('cache-control')).toBe('no-cache');
      expect(page.text).toContain('<title>console</title>');
      securityHeaders(page);
    }
  });

  test('assets are cached for a year; an unknown asset is 404; errors carry the headers too', async () => {
    const js = await call('GET', '/console/assets/app-abc123.js');
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(js.text).toBe('console.log(1);');
    securityHeaders(js);
    expect((await call('GET', '/console/assets/app-abc123.css')).headers.get('content-type')).toBe('text/css; charset=utf-8');
    const missing = await call('GET', '/console/assets/app-nope.js');
    expect(missing.status).toBe(404);
    securityHeaders(missing);
    securityHeaders(await call('GET', '/console/api/session'));
  });

  test('no path leaves the assets folder, encoded or not', async () => {
    for (const target of [
      '/console/assets/../secret.txt',
      '/console/assets/%2e%2e/secret.txt',
      '/console/assets/%2E%2E%2Fsecret.txt',
      '/console/assets/..%2fsecret.txt',
      '/console/assets/..%5csecret.txt',
      '/console/assets/%2e%2e%2f%2e%2e%2fpackage.json',
      '/console/assets/.',
      '/console/assets/',
      '/console/assets//etc/passwd',
    ]) {
      const res = await call('GET', target);
      expect(res.text).not.toContain('outside the assets folder');
      // fetch() normalises a literal '/../': that one reaches /console/secret.txt, an app route (index.html).
      expect([200, 400, 404]).toContain(res.status);
      if (res.status === 200) expect(res.text).toContain('<title>console</title>');
    }
  });

  test('without a build, /console is a 503 saying how to build it', async () => {
    const bare = await startRouteApp({}, { consoleDir: path.join(dir, 'missing') });
    try {
      const res = await fetch(`${bare.url}/console`);
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain('npm run build');
      // An asset of a console never built: the same 503, not a 404.
      const asset = await fetch(`${bare.url}/console/assets/console-ABC.js`);
      expect(asset.status).toBe(503);
      expect(((await asset.json()) as { error: { code: string } }).error.code).toBe('console_not_built');
    } finally {
      await bare.close();
    }
  });
});
