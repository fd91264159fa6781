/**
 * The in-process token bucket, on an injected clock: burst to capacity, continuous refill,
 * Retry-After, independence of keys and limits, and bounded memory.
 */
import { LocalRateLimiter, RPM_MAX, WINDOW_MS } from '../../src/limits/rate-limiter';

/** A hand-driven millisecond clock. */
function clock(start = 1_000_000): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

async function drain(limiter: LocalRateLimiter, keyId: string, rpm: number, n: number): Promise<boolean[]> {
  const allowed: boolean[] = [];
  for (let i = 0; i < n; i++) allowed.push((await limiter.take(keyId, rpm)).allowed);
  return allowed;
}

describe('LocalRateLimiter', () => {
  it('bursts to capacity, then refuses with a Retry-After', async () => {
    const c = clock();
    const limiter = new LocalRateLimiter(c.now);
    const first = await limiter.take('k', 5);
    expect(first).toEqual({ allowed: true, limit: 5, remaining: 4, retryAfterSeconds: 0, resetSeconds: 12 });
    expect(await drain(limiter, 'k', 5, 4)).toEqual([true, true, true, true]);
    const refused = await limiter.take('k', 5);
    // One token per 12 s at 5 rpm, none of it elapsed; the bucket is full again after 60 s.
    expect(refused).toEqual({ allowed: false, limit: 5, remaining: 0, retryAfterSeconds: 12, resetSeconds: 60 });
    expect(limiter.kind).toBe('local');
  });

  it('refills continuously, and Retry-After counts down to the next token', async () => {
    const c = clock();
    const limiter = new LocalRateLimiter(c.now);
    expect(await drain(limiter, 'k', 60, 60)).toEqual(Array(60).fill(true));
    expect((await limiter.take('k', 60)).retryAfterSeconds).toBe(1);

    c.advance(400); // 0.4 of a token: still refused, and a refusal spends nothing
    const early = await limiter.take('k', 60);
    expect(early.allowed).toBe(false);
    expect(early.retryAfterSeconds).toBe(1); // 600 ms, rounded up to whole seconds

    c.advance(600); // exactly one token
    expect((await limiter.take('k', 60)).allowed).toBe(true);
    expect((await limiter.take('k', 60)).allowed).toBe(false);

    c.advance(10_000); // ten tokens, no more
    expect(await drain(limiter, 'k', 60, 11)).toEqual([...Array(10).fill(true), false]);
  });

  it('Retry-After is exact for slow limits and rounds partial seconds up', async () => {
    const c = clock();
    const limiter = new LocalRateLimiter(c.now);
    await limiter.take('slow', 1);
    expect(await limiter.take('slow', 1)).toMatchObject({ allowed: false, retryAfterSeconds: 60, resetSeconds: 60 });
    c.advance(59_001);
    expect(await limiter.take('slow', 1)).toMatchObject({ allowed: false, retryAfterSeconds: 1 });
    c.advance(998);
    expect((await limiter.take('slow', 1)).allowed).toBe(false);
    c.advance(1);
    expect(await limiter.take('slow', 1)).toMatchObject({ allowed: true, remaining: 0 });

    // 7 rpm: a token every 8571.43 ms, so the wait is 8572 ms, i.e. 9 s.
    await drain(limiter, 'seven', 7, 7);
    expect(await limiter.take('seven', 7)).toMatchObject({ allowed: false, retryAfterSeconds: 9 });
  });

  it('never holds more than capacity, however long the key was idle', async () => {
    const c = clock();
    const limiter = new LocalRateLimiter(c.now);
    await drain(limiter, 'k', 3, 3);
    c.advance(10 * WINDOW_MS);
    expect(await drain(limiter, 'k', 3, 4)).toEqual([true, true, true, false]);
  });

  it('keeps keys independent', async () => {
    const limiter = new LocalRateLimiter(clock().now);
    expect(await drain(limiter, 'a', 2, 3)).toEqual([true, true, false]);
    expect(await drain(limiter, 'b', 2, 3)).toEqual([true, true, false]);
    expect((await limiter.take('a', 2)).allowed).toBe(false);
  });

  it('applies each rpm value as given, including a changed limit for a key', async () => {
    const c = clock();
    const limiter = new LocalRateLimiter(c.now);
    expect((await drain(limiter, 'ten', 10, 11)).filter(Boolean)).toHaveLength(10);
    expect((await drain(limiter, 'hundred', 100, 101)).filter(Boolean)).toHaveLength(100);
    expect((await limiter.take('big', RPM_MAX)).remaining).toBe(RPM_MAX - 1);

    // Lowering a key's limit clamps its bucket to the new capacity.
    await limiter.take('changed', 100);
    expect(await limiter.take('changed', 3)).toMatchObject({ allowed: true, limit: 3, remaining: 2 });
    // Raising it refills at the new rate: 120 rpm is 2 tokens a second.
    c.advance(1_000);
    expect((await limiter.take('changed', 120)).remaining).toBe(3);
  });

  it('treats a clock that steps backwards as no time passing', async () => {
    const c = clock();
    const limiter = new LocalRateLimiter(c.now);
    await drain(limiter, 'k', 2, 2);
    c.advance(-5_000);
    expect((await limiter.take('k', 2)).allowed).toBe(false);
  });

  it('rejects limits the arithmetic cannot honour', async () => {
    const limiter = new LocalRateLimiter(clock().now);
    for (const rpm of [0, -1, 1.5, Number.NaN, RPM_MAX + 1]) {
      expect(() => limiter.take('k', rpm)).toThrow(RangeError); // synchronous: the in-process limiter answers without a promise
    }
  });

  it('drops idle buckets and caps how many it holds', async () => {
    const c = clock();
    const limiter = new LocalRateLimiter(c.now, 3);
    for (const k of ['a', 'b', 'c', 'd']) await limiter.take(k, 1);
    expect(limiter.size).toBe(3); // 'a', the least recently used, went first
    expect((await limiter.take('d', 1)).allowed).toBe(false); // live buckets keep their state

    c.advance(WINDOW_MS); // all of them full again, so all droppable
    await limiter.take('e', 1);
    expect(limiter.size).toBe(1);
    // A dropped bucket was full, so nothing changes for its key.
    expect(await limiter.take('d', 1)).toMatchObject({ allowed: true, remaining: 0 });
  });
});
