/**
 * The pure parts of the edge's bounds: request targets that must decode, the address a
 * per-client limit is keyed by, the per-address limit of failed authentications, and the
 * @mentions of a prompt (a documented maximum, deduplicated, looked up 4 at a time, stopping
 * at the first unknown one), and refusals that cost no stack trace.
 */
import { addressKey } from '../../src/api/middleware/client-address';
import { decodeTarget } from '../../src/api/middleware/request-target';
import { lookUpMentions, MAX_MENTIONS, mentionedUsernames, MENTION_LOOKUP_CONCURRENCY } from '../../src/api/character-mentions';
import { AuthenticationError, InvalidRequestError } from '../../src/api/errors';
import { toGatewayError } from '../../src/api/middleware/errors';
import { AuthFailureLimit } from '../../src/limits/auth-failures';
import { migrate } from '../../src/store/migrations';
import { BOTH_STORES } from '../support/stores';
import { LocalRateLimiter } from '../../src/limits/rate-limiter';

describe('request targets', () => {
  test.each([
    ['/files/%E0%A4%A', null],
    ['/files/%', null],
    ['/files/%zz', null],
    ['/v1/videos/%ED%A0%80', null], // an encoded lone surrogate is not UTF-8
    ['/v1/videos/%C0%AF', null], // an overlong encoding of '/'
    ['/admin/keys/a%00b', null],
    ['id=a&id=%FF', null],
    ['/files/videos/a.mp4', '/files/videos/a.mp4'],
    ['/v1/videos/vid%3Aabc', '/v1/videos/vid:abc'],
    ['/files/%E0%A4%A4', '/files/\u0924'],
    ['expires=1&signature=a%2Bb', 'expires=1&signature=a+b'],
  ])('%s', (raw, decoded) => {
    expect(decodeTarget(raw)).toBe(decoded);
  });
});

describe('client address keys', () => {
  test.each([
    ['127.0.0.1', '127.0.0.1'],
    ['::ffff:10.1.2.3', '10.1.2.3'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::7', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:ffff::1', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['64:ff9b::192.0.2.33', '64:ff9b:0:0::/64'],
  ])('%s -> %s', (address, key) => {
    expect(addressKey(address)).toBe(key);
  });
});

describe('refusals', () => {
  test('a gateway error captures no stack frames, and leaves the stack trace limit as it found it', () => {
    const before = Error.stackTraceLimit;
    const refusal = new AuthenticationError();
    expect(refusal.stack).not.toMatch(/\n\s+at /);
    expect(refusal.message).toMatch(/Invalid API key/);
    expect(Error.stackTraceLimit).toBe(before);
    // Faults keep theirs.
    expect(new Error('fault').stack).toMatch(/\n\s+at /);
  });
});

describe('failed authentications per address', () => {
  let clock = 0;
  const limit = () => new AuthFailureLimit(new LocalRateLimiter(() => clock), 30, () => clock);

  test('30 failures pass, the 31st blocks the address until a token is back; others are untouched', () => {
    clock = 1_000_000;
    const failures = limit();
    for (let i = 0; i < 30; i++) {
      failures.failed('10.0.0.1');
      expect(failures.retryAfterSeconds('10.0.0.1')).toBe(0);
    }
    failures.failed('10.0.0.1');
    expect(failures.retryAfterSeconds('10.0.0.1')).toBe(2); // 30 a minute: one token every 2 s
    expect(failures.retryAfterSeconds('10.0.0.2')).toBe(0);
    clock += 2000;
    expect(failures.retryAfterSeconds('10.0.0.1')).toBe(0);
    expect(failures.size).toBe(0);
    // One token came back: one more failure is allowed, the next blocks again.
    failures.failed('10.0.0.1');
    expect(failures.retryAfterSeconds('10.0.0.1')).toBe(0);
    failures.failed('10.0.0.1');
    expect(failures.retryAfterSeconds('10.0.0.1')).toBeGreaterThan(0);
  });

  test('memory stays bounded under a flood of addresses', () => {
    clock = 5_000_000;
    const failures = new AuthFailureLimit(new LocalRateLimiter(() => clock), 1, () => clock, 100);
    for (let i = 0; i < 1000; i++) {
      failures.failed(`10.1.${i >> 8}.${i & 255}`);
      failures.failed(`10.1.${i >> 8}.${i & 255}`);
    }
    expect(failures.size).toBeLessThanOrEqual(100);
  });
});

describe('@mentions', () => {
  const prompt = (n: number) => Array.from({ length: n }, (_, i) => `@char${i}`).join(' and ');

  test('distinct, lower-cased, in order; addresses and trailing dots are no mention', () => {
    expect(mentionedUsernames('@Alice meets @bob. Then @alice again, mail a@b.com, @bob..')).toEqual(['alice', 'bob']);
  });

  test(`at most ${MAX_MENTIONS} distinct mentions; repeats do not count`, () => {
    expect(MAX_MENTIONS).toBe(10);
    expect(mentionedUsernames(prompt(MAX_MENTIONS))).toHaveLength(MAX_MENTIONS);
    expect(mentionedUsernames(`${prompt(MAX_MENTIONS)} ${prompt(MAX_MENTIONS)}`.repeat(500))).toHaveLength(MAX_MENTIONS);
    let error: unknown;
    try {
      mentionedUsernames(prompt(5000));
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect((error as InvalidRequestError).code).toBe('too_many_mentions');
    expect((error as InvalidRequestError).message).toContain(String(MAX_MENTIONS));
  });

  type Looked = { username: string; channel: string; upstreamId: string };
  const character = (username: string) => ({ username, channel: 'sim', upstreamId: `up_${username}` }) as unknown as Looked;

  test(`looked up ${MENTION_LOOKUP_CONCURRENCY} at a time, results in mention order`, async () => {
    let running = 0;
    let most = 0;
    const names = Array.from({ length: MAX_MENTIONS }, (_, i) => `c${i}`);
    const result = await lookUpMentions(names, async (u) => {
      running++;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 5 + (u.length % 3)));
      running--;
      return character(u) as never;
    });
    expect(most).toBe(MENTION_LOOKUP_CONCURRENCY);
    expect('found' in result && result.found.map((c) => (c as unknown as Looked).username)).toEqual(names);
  });

  test('no lookup starts after an unknown one; the first unknown in mention order is named', async () => {
    const asked: string[] = [];
    const names = Array.from({ length: MAX_MENTIONS }, (_, i) => `c${i}`);
    const result = await lookUpMentions(names, async (u) => {
      asked.push(u);
      await new Promise((r) => setTimeout(r, u === 'c1' ? 1 : 20));
      return u === 'c1' || u === 'c3' ? null : (character(u) as never);
    });
    expect(result).toEqual({ unknown: 'c1' });
    // c0-c3 were under way when c1 came back unknown (c3, unknown too, comes later in the prompt); none started after it.
    expect(asked).toEqual(['c0', 'c1', 'c2', 'c3']);
  });

  test('a failing lookup fails the whole cast', async () => {
    await expect(
      lookUpMentions(['a', 'b'], async () => {
        throw new Error('temporal down');
      }),
    ).rejects.toThrow('temporal down');
  });
});

describe.each(BOTH_STORES)("text the store cannot hold is the client's 400 (%s)", (_name, open) => {
  test('a NUL in a stored text value', async () => {
    const opened = await open();
    try {
      await migrate(opened.db);
      let error: unknown;
      try {
        await opened.db.query("insert into api_keys (id, name, key_hash, key_hint) values ('key_nul', $1, 'h', 'sk-...x')", ['a\u0000b']);
      } catch (err) {
        error = err;
      }
      expect(error).toBeDefined();
      const mapped = toGatewayError(error, 1024);
      expect(mapped?.status).toBe(400);
      expect(mapped?.code).toBe('invalid_text');
    } finally {
      await opened.cleanup();
    }
  }, 60_000);
});
