/** The console's query schemas and spend bucketing (pure parts; the e2e test runs them on the stack). */
import { bucketStart } from '../../src/billing/spend';
import { adminTasksQuery, keyListQuery } from '../../src/api/schemas/admin-keys';
import { ledgerQuery } from '../../src/api/schemas/ledger-query';
import { spendQuery } from '../../src/api/schemas/spend-query';
import { characterListQuery } from '../../src/api/schemas/character-create';
import { signInBody } from '../../src/api/console/session-routes';
import { assetFile } from '../../src/api/console/static-assets';
import { sessionCookie, clearedSessionCookie, sessionIdOf } from '../../src/api/console/cookie';
import { consoleCsp } from '../../src/api/console/security-headers';
import { tokensMatch } from '../../src/api/console/csrf';

const NOW = 1_795_520_789; // 2026-11-24T11:46:29Z

describe('spend buckets', () => {
  test('bucketStart is the UTC midnight or top of the hour', () => {
    expect(bucketStart(NOW, 'hour')).toBe(1_795_518_000);
    expect(new Date(bucketStart(NOW, 'day') * 1000).toISOString()).toBe('2026-11-24T00:00:00.000Z');
    expect(bucketStart(1_795_518_000, 'hour')).toBe(1_795_518_000);
  });

  test('defaults: 30 days of days, 48 hours of hours, ending with the bucket holding now', () => {
    const day = spendQuery(NOW).parse({});
    expect(day).toEqual({ granularity: 'day', until: bucketStart(NOW, 'day') + 86_400, since: bucketStart(NOW, 'day') + 86_400 - 30 * 86_400 });
    const hour = spendQuery(NOW).parse({ granularity: 'hour' });
    expect(hour.until - hour.since).toBe(48 * 3600);
    expect(hour.until).toBeGreaterThan(NOW);
  });

  test('more than 400 buckets, since after until, unknown or malformed parameters are refused', () => {
    expect(spendQuery(NOW).safeParse({ granularity: 'hour', since: String(NOW - 401 * 3600), until: String(NOW) }).success).toBe(false);
    expect(spendQuery(NOW).safeParse({ granularity: 'hour', since: String(NOW - 400 * 3600), until: String(NOW) }).success).toBe(true);
    expect(spendQuery(NOW).safeParse({ since: String(NOW), until: String(NOW - 1) }).success).toBe(false);
    expect(spendQuery(NOW).safeParse({ granularity: 'week' }).success).toBe(false);
    expect(spendQuery(NOW).safeParse({ since: 'yesterday' }).success).toBe(false);
    expect(spendQuery(NOW).safeParse({ bucket: 'day' }).success).toBe(false);
  });
});

describe('query schemas', () => {
  test('ledger filters', () => {
    expect(ledgerQuery.parse({ kind: 'charge', model: 'vidgen3', since: '1795000000' })).toMatchObject({
      kind: 'charge',
      model: 'vidgen3',
      since: 1_795_000_000,
    });
    expect(ledgerQuery.safeParse({ kind: 'gift' }).success).toBe(false);
    expect(ledgerQuery.safeParse({ since: '1795000001', until: '1795000000' }).success).toBe(false);
  });

  test('admin tasks, key list, characters list', () => {
    expect(adminTasksQuery.parse({})).toEqual({ limit: 20 });
    expect(adminTasksQuery.safeParse({ status: 'cancelled' }).success).toBe(false);
    expect(adminTasksQuery.safeParse({ limit: '101' }).success).toBe(false);
    expect(keyListQuery.parse({})).toEqual({ include_revoked: false });
    expect(keyListQuery.parse({ include_revoked: 'true' })).toEqual({ include_revoked: true });
    expect(characterListQuery.safeParse({ limit: '0' }).success).toBe(false);
  });

  test('sign-in takes exactly one of api_key and admin_token', () => {
    expect(signInBody.safeParse({ api_key: 'sk-x' }).success).toBe(true);
    expect(signInBody.safeParse({ admin_token: 't' }).success).toBe(true);
    expect(signInBody.safeParse({ api_key: 'sk-x', admin_token: 't' }).success).toBe(false);
    expect(signInBody.safeParse({}).success).toBe(false);
    expect(signInBody.safeParse({ api_key: '' }).success).toBe(false);
  });
});

describe('cookie, CSRF and headers', () => {
  test('the cookie flags', () => {
    expect(sessionCookie('abc', false)).toBe('gw_session=abc; Path=/; HttpOnly; SameSite=Strict');
    expect(sessionCookie('abc', true)).toBe('gw_session=abc; Path=/; HttpOnly; SameSite=Strict; Secure');
    expect(clearedSessionCookie(false)).toBe('gw_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict');
  });

  test('the session id is read from among other cookies, and only a well-formed one', () => {
    expect(sessionIdOf('a=1; gw_session=Zm9v_-9; b=2')).toBe('Zm9v_-9');
    expect(sessionIdOf('gw_sessionx=1')).toBeNull();
    expect(sessionIdOf('gw_session=a%20b')).toBeNull();
    expect(sessionIdOf('')).toBeNull();
  });

  test('tokens compare whole, and an empty one never matches', () => {
    expect(tokensMatch('abc', 'abc')).toBe(true);
    expect(tokensMatch('abd', 'abc')).toBe(false);
    expect(tokensMatch('ab', 'abc')).toBe(false);
    expect(tokensMatch('', '')).toBe(false);
  });

  test('the CSP names PUBLIC_BASE_URL for images and media only', () => {
    const csp = consoleCsp('https://gw.example');
    expect(csp).toContain("img-src 'self' data: blob: https://gw.example");
    expect(csp).toContain("media-src 'self' blob: https://gw.example");
    expect(csp).toContain("script-src 'self';");
    expect(csp).not.toContain('unsafe');
  });

  test('asset paths never leave the folder', () => {
    expect(assetFile('/srv/console/assets', 'app-1.js')).toBe('/srv/console/assets/app-1.js');
    for (const bad of ['../x', '%2e%2e/x', '%2E%2E%2Fx', 'a/../../x', '..%5cx', '.env', 'a//b', '', '%00', 'C:x', '%']) {
      expect(assetFile('/srv/console/assets', bad)).toBeNull();
    }
  });
});
