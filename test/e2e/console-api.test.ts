/**
 * The console's backend on the real stack (issue 21): API and worker processes, PostgreSQL,
 * the Temporal dev server and the simulator. Sign-in and its cookie, CSRF, the session's roles
 * on every admin route, sign-out, revocation and idle expiry, and the read endpoints the
 * console draws from (spend, timeline, characters, admin keys and tasks).
 */
import pg from 'pg';
import { adminRoutes, type AdminDeps } from '../../src/api/routes/admin';
import { bucketStart } from '../../src/billing/spend';
import { DEFAULT_PRICES, videoTaskPrice } from '../../src/billing/prices';
import { call, createTask, waitForTerminal } from '../support/client';
import { ADMIN_TOKEN, startGateway, type Gateway } from '../support/stack';

const FAST = videoTaskPrice(DEFAULT_PRICES, { model: 'vidgen3-fast' });
const TEMPORAL_UI = 'http://temporal-ui.example:8233';

let gw: Gateway;
let db: pg.Client;

beforeAll(async () => {
  gw = await startGateway({ env: { TEMPORAL_UI_URL: TEMPORAL_UI } });
  db = new pg.Client({ connectionString: gw.databaseUrl });
  await db.connect();
}, 120_000);

afterAll(async () => {
  await db?.end();
  await gw?.stop();
}, 120_000);

interface Session {
  cookie: string;
  csrf: string;
  setCookie: string;
  body: Record<string, unknown>;
}

async function signIn(credential: Record<string, string>, headers: Record<string, string> = {}): Promise<Session> {
  const res = await call<Record<string, unknown>>(`${gw.url}/console/api/session`, { json: credential, headers });
  expect(res.status).toBe(201);
  const setCookie = res.headers.get('set-cookie') ?? '';
  return { cookie: setCookie.split(';')[0] ?? '', csrf: String(res.body.csrf_token), setCookie, body: res.body };
}

const withCookie = (s: Session, extra: Record<string, string> = {}) => ({ cookie: s.cookie, ...extra });
const errorCode = (body: unknown) => (body as { error?: { code?: string } }).error?.code;

describe('sessions', () => {
  test('a key signs in: HttpOnly, SameSite=Strict, no Secure on http; the cookie alone reads /v1/billing', async () => {
    const { key } = await gw.issueKeyWithId('console', { quota: 1000 });
    const s = await signIn({ api_key: key });
    expect(s.setCookie).toMatch(/^gw_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict$/);
    const billing = await call<{ balance: number }>(`${gw.url}/v1/billing`, { headers: withCookie(s) });
    expect(billing.status).toBe(200);
    expect(billing.body.balance).toBe(1000);
  });

  test('Secure is set when X-Forwarded-Proto is https and TRUST_PROXY is on', async () => {
    const replica = await gw.startApiReplica({ TRUST_PROXY: 'true' });
    const res = await call(`${replica}/console/api/session`, { json: { admin_token: ADMIN_TOKEN }, headers: { 'x-forwarded-proto': 'https' } });
    expect(res.status).toBe(201);
    expect(res.headers.get('set-cookie')).toMatch(/; Secure$/);
    // Without TRUST_PROXY the header is the client's word: no Secure.
    expect((await signIn({ admin_token: ADMIN_TOKEN }, { 'x-forwarded-proto': 'https' })).setCookie).not.toContain('Secure');
  });

  test('a POST with the cookie: no token or a foreign Origin is 403 csrf_failed; with the token it goes through', async () => {
    const { key } = await gw.issueKeyWithId('csrf', { quota: 10 * FAST });
    const s = await signIn({ api_key: key });
    const create = { model: 'vidgen3-fast', prompt: 'csrf check [sim:ms=100]' };
    const noToken = await call(`${gw.url}/v1/video/create`, { json: create, headers: withCookie(s) });
    expect(noToken.status).toBe(403);
    expect(errorCode(noToken.body)).toBe('csrf_failed');
    const foreign = await call(`${gw.url}/v1/video/create`, {
      json: create,
      headers: withCookie(s, { 'x-csrf-token': s.csrf, origin: 'https://attacker.example' }),
    });
    expect(foreign.status).toBe(403);
    expect(errorCode(foreign.body)).toBe('csrf_failed');
    const ok = await call<{ id: string }>(`${gw.url}/v1/video/create`, { json: create, headers: withCookie(s, { 'x-csrf-token': s.csrf, origin: gw.url }) });
    expect(ok.status).toBe(200);
    await waitForTerminal(gw.url, key, ok.body.id);
  });

  test('a key session is refused on every admin route (403 admin_session_required); an admin session works', async () => {
    const { id, key } = await gw.issueKeyWithId('not-admin');
    const s = await signIn({ api_key: key });
    // Every route the admin router mounts, enumerated from the router itself.
    const routes = adminRoutes({} as unknown as AdminDeps).stack.flatMap((layer) =>
      layer.methods.filter((m) => m !== 'HEAD').map((method) => ({ method, path: String(layer.path).replace(':id', id) })),
    );
    expect(routes.length).toBeGreaterThanOrEqual(10);
    for (const route of routes) {
      const res = await call(`${gw.url}${route.path}`, {
        method: route.method,
        headers: withCookie(s, { 'x-csrf-token': s.csrf, 'content-type': 'application/json' }),
        body: route.method === 'GET' || route.method === 'DELETE' ? undefined : '{}',
      });
      expect({ route, status: res.status, code: errorCode(res.body) }).toEqual({ route, status: 403, code: 'admin_session_required' });
    }
    // Nothing happened: the key is still live.
    expect((await call(`${gw.url}/v1/billing`, { key })).status).toBe(200);
    const admin = await signIn({ admin_token: ADMIN_TOKEN });
    expect(admin.body).toMatchObject({ role: 'admin', key: null, temporal_ui_url: TEMPORAL_UI });
    expect((await call(`${gw.url}/admin/keys`, { headers: withCookie(admin) })).status).toBe(200);
  });

  test('after sign-out the same cookie is 401', async () => {
    const { key } = await gw.issueKeyWithId('logout');
    const s = await signIn({ api_key: key });
    const out = await call(`${gw.url}/console/api/session`, { method: 'DELETE', headers: withCookie(s, { 'x-csrf-token': s.csrf }) });
    expect(out.status).toBe(200);
    expect(out.headers.get('set-cookie')).toContain('Max-Age=0');
    expect((await call(`${gw.url}/v1/billing`, { headers: withCookie(s) })).status).toBe(401);
    expect((await call(`${gw.url}/console/api/session`, { headers: withCookie(s) })).status).toBe(401);
  });

  test("a revoked key's session is 401", async () => {
    const { id, key } = await gw.issueKeyWithId('revoked');
    const s = await signIn({ api_key: key });
    expect((await call(`${gw.url}/v1/billing`, { headers: withCookie(s) })).status).toBe(200);
    expect((await call(`${gw.url}/admin/keys/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status).toBe(200);
    expect((await call(`${gw.url}/v1/billing`, { headers: withCookie(s) })).status).toBe(401);
    expect((await call(`${gw.url}/console/api/session`, { headers: withCookie(s) })).status).toBe(401);
  });

  test('a session idle past CONSOLE_SESSION_IDLE_MINUTES is 401 (the row aged in the store, no waiting)', async () => {
    const { key } = await gw.issueKeyWithId('idle');
    const s = await signIn({ api_key: key });
    const fresh = await signIn({ api_key: key });
    // 31 minutes idle, the default limit being 30: only this session's row.
    const aged = await db.query("update console_sessions set last_seen_at = now() - interval '31 minutes' where csrf_token = $1", [s.csrf]);
    expect(aged.rowCount).toBe(1);
    expect((await call(`${gw.url}/v1/billing`, { headers: withCookie(s) })).status).toBe(401);
    expect((await call(`${gw.url}/v1/billing`, { headers: withCookie(fresh) })).status).toBe(200);
    // Past the absolute lifetime (8 h) however recently used.
    await db.query("update console_sessions set created_at = now() - interval '9 hours' where csrf_token = $1", [fresh.csrf]);
    expect((await call(`${gw.url}/v1/billing`, { headers: withCookie(fresh) })).status).toBe(401);
    // Both rows are gone (deleted when presented expired).
    expect((await db.query('select 1 from console_sessions where csrf_token = any($1)', [[s.csrf, fresh.csrf]])).rowCount).toBe(0);
  });
});

describe('read endpoints', () => {
  let keyId: string;
  let key: string;
  let session: Session;
  let taskId: string;

  beforeAll(async () => {
    ({ id: keyId, key } = await gw.issueKeyWithId('reader', { quota: 100 * FAST }));
    session = await signIn({ api_key: key });
    const task = await createTask(gw.url, key, { model: 'vidgen3-fast', prompt: 'a completed task [sim:ms=300]' });
    taskId = task.id;
    expect((await waitForTerminal(gw.url, key, taskId)).final.status).toBe('completed');
  }, 120_000);

  test('spend shows the charge under its model and UTC bucket', async () => {
    const res = await call<{ object: string; granularity: string; data: { start: number; model: string; spent: number; count: number }[] }>(
      `${gw.url}/v1/billing/spend?granularity=hour`,
      { headers: withCookie(session) },
    );
    expect(res.status).toBe(200);
    const [charge] = (
      await db.query<{ at: string }>("select extract(epoch from created_at)::bigint as at from ledger_entries where ref = $1 and kind = 'charge'", [taskId])
    ).rows;
    expect(res.body).toMatchObject({ object: 'billing.spend', granularity: 'hour' });
    expect(res.body.data).toContainEqual({ start: bucketStart(Number(charge?.at), 'hour'), model: 'vidgen3-fast', spent: FAST, count: 1 });
    const bad = await call(`${gw.url}/v1/billing/spend?granularity=hour&since=1000000000&until=1900000000`, { headers: withCookie(session) });
    expect(bad.status).toBe(400);
    expect((await call(`${gw.url}/v1/billing/spend?granularity=week`, { headers: withCookie(session) })).status).toBe(400);
    const filtered = await call<{ data: { kind: string; ref: string }[] }>(`${gw.url}/v1/billing/ledger?kind=charge&model=vidgen3-fast`, { key });
    expect(filtered.body.data.map((e) => [e.kind, e.ref])).toEqual([['charge', taskId]]);
  });

  test('the list carries the cost; the timeline of the completed task reads in order', async () => {
    const list = await call<{ data: { id: string; cost: number }[] }>(`${gw.url}/v1/videos`, { headers: withCookie(session) });
    expect(list.body.data.find((v) => v.id === taskId)?.cost).toBe(FAST);
    const res = await call<{ object: string; id: string; data: { at: number; event: string; detail: string | null }[] }>(
      `${gw.url}/v1/videos/${taskId}/timeline`,
      { headers: withCookie(session) },
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'video.timeline', id: taskId });
    const events = res.body.data.map((e) => e.event);
    expect(events).toEqual(expect.arrayContaining(['created', 'charged', 'submitted', 'stored', 'completed']));
    for (const [before, after] of [
      ['charged', 'submitted'],
      ['created', 'submitted'],
      ['submitted', 'stored'],
      ['stored', 'completed'],
    ]) {
      expect(events.indexOf(before!)).toBeLessThan(events.indexOf(after!));
    }
    expect(events).not.toContain('refunded');
    expect(res.body.data.find((e) => e.event === 'charged')?.detail).toBe(`${FAST} credits`);
    // Another key's task is not found.
    const other = await gw.issueKey('other');
    expect((await call(`${gw.url}/v1/videos/${taskId}/timeline`, { key: other })).status).toBe(404);
  });

  test('admin tasks: filters by key, status and model, with cost and the Temporal UI link', async () => {
    const admin = await signIn({ admin_token: ADMIN_TOKEN });
    type Page = { data: { id: string; key_id: string; cost: number; status: string; temporal_ui_url: string | null }[] };
    const mine = await call<Page>(`${gw.url}/admin/tasks?key_id=${keyId}`, { headers: withCookie(admin) });
    expect(mine.status).toBe(200);
    expect(mine.body.data.map((t) => t.id)).toEqual([taskId]);
    expect(mine.body.data[0]).toMatchObject({
      key_id: keyId,
      cost: FAST,
      status: 'completed',
      temporal_ui_url: `${TEMPORAL_UI}/namespaces/default/workflows/${encodeURIComponent(taskId)}`,
    });
    expect(
      (await call<Page>(`${gw.url}/admin/tasks?key_id=${keyId}&status=completed&model=vidgen3-fast`, { headers: withCookie(admin) })).body.data,
    ).toHaveLength(1);
    expect((await call<Page>(`${gw.url}/admin/tasks?key_id=${keyId}&status=failed`, { headers: withCookie(admin) })).body.data).toEqual([]);
    expect((await call<Page>(`${gw.url}/admin/tasks?key_id=${keyId}&model=motion-2`, { headers: withCookie(admin) })).body.data).toEqual([]);
    const across = await call<Page>(`${gw.url}/admin/tasks?limit=100`, { headers: withCookie(admin) });
    expect(across.body.data.map((t) => t.id)).toContain(taskId);
    expect((await call(`${gw.url}/admin/tasks?status=done`, { headers: withCookie(admin) })).status).toBe(400);
  });

  test('/admin/keys lists balances and spending', async () => {
    const res = await call<{ data: { id: string; balance: number | null; spent: number; revoked_at: number | null }[] }>(`${gw.url}/admin/keys`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(res.body.data.find((k) => k.id === keyId)).toMatchObject({ balance: 99 * FAST, spent: FAST, revoked_at: null });
  });

  test('characters list: the key characters, newest first', async () => {
    const source = await createTask(gw.url, key, { model: 'motion-2', prompt: 'a red panda waves [sim:ms=200]', images: [] });
    await waitForTerminal(gw.url, key, source.id);
    const made = await call<{ id: string; username: string }>(`${gw.url}/motion/v1/characters`, {
      json: { from_task: source.id, timestamps: '0,1.5' },
      headers: withCookie(session, { 'x-csrf-token': session.csrf }),
    });
    expect(made.status).toBe(200);
    const list = await call<{ object: string; data: { id: string; username: string; profile_picture_url: string }[] }>(`${gw.url}/motion/v1/characters`, {
      headers: withCookie(session),
    });
    expect(list.status).toBe(200);
    expect(list.body.data[0]).toMatchObject({ id: made.body.id, username: made.body.username, profile_picture_url: expect.any(String) });
    expect((await call(`${gw.url}/motion/v1/characters?limit=0`, { headers: withCookie(session) })).status).toBe(400);
  });

  // Last: it stops the worker.
  test('the timeline reads with the worker down (history comes from the Temporal server)', async () => {
    await gw.killWorker();
    const res = await call<{ data: { event: string }[] }>(`${gw.url}/v1/videos/${taskId}/timeline`, { headers: withCookie(session) });
    expect(res.status).toBe(200);
    expect(res.body.data.map((e) => e.event)).toContain('completed');
  });
});
