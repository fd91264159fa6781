/**
 * Guessing the operator's secrets (the admin token on /admin, the metrics token on /metrics)
 * costs from the same per-address budget of failed authentications as guessing keys: once an
 * address is over it, even the right secret is refused there (429 with Retry-After) until a
 * token is back, and other addresses are untouched. Addresses come from X-Forwarded-For
 * (TRUST_PROXY), so each test has its own.
 */
import { ADMIN_TOKEN, startRouteApp, type RouteApp } from './harness';

const METRICS_TOKEN = 'route-test-metrics-token';
const BUDGET = 5;

let app: RouteApp;
let key: string;

beforeAll(async () => {
  app = await startRouteApp({ AUTH_FAILURES_PER_MINUTE: String(BUDGET), TRUST_PROXY: 'true', METRICS_TOKEN });
  key = await app.issueKey(1000);
}, 60_000);

afterAll(async () => app?.close());

const from = (address: string, token?: string): Record<string, string> => ({
  'x-forwarded-for': address,
  ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
});

async function get(path: string, headers: Record<string, string>): Promise<{ status: number; retryAfter: string | null; code: unknown }> {
  const res = await fetch(`${app.url}${path}`, { headers });
  const text = await res.text();
  // Errors are JSON; /metrics answers Prometheus' text.
  const code = res.headers.get('content-type')?.includes('json') ? (JSON.parse(text) as { error?: { code?: unknown } }).error?.code : undefined;
  return { status: res.status, retryAfter: res.headers.get('retry-after'), code };
}

/** The budget's wrong guesses answered 401; the next one finds the bucket empty and blocks the address. */
async function exhaust(path: string, address: string): Promise<void> {
  for (let i = 0; i <= BUDGET; i++) expect((await get(path, from(address, `wrong-${i}`))).status).toBe(401);
}

test('wrong admin tokens spend the address budget: then 429 on /admin, the right token included, and on key routes for unknown keys', async () => {
  // The key has worked here before: keys this process found valid are not held to their address's failures.
  expect((await get('/v1/models', from('203.0.113.11', key))).status).toBe(200);
  await exhaust('/admin/keys', '203.0.113.10');
  const blocked = await get('/admin/keys', from('203.0.113.10', ADMIN_TOKEN));
  expect(blocked).toMatchObject({ status: 429, code: 'rate_limit_exceeded' });
  expect(Number(blocked.retryAfter)).toBeGreaterThanOrEqual(1);
  expect((await get('/v1/models', from('203.0.113.10', 'sk-guessed'))).status).toBe(429);
  // Another address, and a key that works from this one, are served.
  expect((await get('/admin/keys', from('203.0.113.11', ADMIN_TOKEN))).status).toBe(200);
  expect((await get('/v1/models', from('203.0.113.10', key))).status).toBe(200);
});

test('wrong metrics tokens spend it too: then 429 on /metrics with the right token', async () => {
  await exhaust('/metrics', '203.0.113.20');
  expect((await get('/metrics', from('203.0.113.20', METRICS_TOKEN))).status).toBe(429);
  expect((await get('/metrics', from('203.0.113.21', METRICS_TOKEN))).status).toBe(200);
});

test('wrong keys spend the budget that the admin token then meets', async () => {
  for (let i = 0; i <= BUDGET; i++) expect((await get('/v1/models', from('203.0.113.30', `sk-wrong-${i}`))).status).toBe(401);
  expect((await get('/admin/keys', from('203.0.113.30', ADMIN_TOKEN))).status).toBe(429);
});

test('a request with no token is not a guess: never blocked', async () => {
  for (let i = 0; i < BUDGET * 3; i++) expect((await get('/admin/keys', from('203.0.113.40'))).status).toBe(401);
  expect((await get('/admin/keys', from('203.0.113.40', ADMIN_TOKEN))).status).toBe(200);
});
