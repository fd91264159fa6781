import { SingleFlight } from '../../src/store/single-flight';

/** A load the test settles by hand. */
function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('SingleFlight', () => {
  it('shares one load among the callers of a key while it runs, and loads again after', async () => {
    const flight = new SingleFlight<number>();
    let loads = 0;
    const d = deferred<number>();
    const load = () => {
      loads += 1;
      return d.promise;
    };
    const callers = Array.from({ length: 5 }, () => flight.run('k', load));
    expect(loads).toBe(1);
    d.resolve(7);
    expect(await Promise.all(callers)).toEqual([7, 7, 7, 7, 7]);
    await flight.run('k', async () => {
      loads += 1;
      return 8;
    });
    expect(loads).toBe(2);
  });

  it('keeps keys apart', async () => {
    const flight = new SingleFlight<string>();
    const [a, b] = await Promise.all([flight.run('a', async () => 'A'), flight.run('b', async () => 'B')]);
    expect([a, b]).toEqual(['A', 'B']);
  });

  it('gives every caller the failure, and tries afresh on the next call', async () => {
    const flight = new SingleFlight<number>();
    const d = deferred<number>();
    const callers = [flight.run('k', () => d.promise), flight.run('k', () => Promise.resolve(1))];
    d.reject(new Error('db down'));
    for (const c of callers) await expect(c).rejects.toThrow('db down');
    await expect(flight.run('k', async () => 2)).resolves.toBe(2);
  });

  it('after invalidate(), a caller starts a fresh load; the old one still answers its own callers, told it is not current', async () => {
    const flight = new SingleFlight<string>();
    const old = deferred<string>();
    let oldCurrent: () => boolean = () => true;
    const before = flight.run('k', (current) => {
      oldCurrent = current;
      return old.promise;
    });
    flight.invalidate();
    let freshCurrent: () => boolean = () => false;
    const after = flight.run('k', async (current) => {
      freshCurrent = current;
      return 'fresh';
    });
    expect(oldCurrent()).toBe(false);
    expect(freshCurrent()).toBe(true);
    // The old load settling late must not remove the fresh one's entry.
    old.resolve('stale');
    expect(await before).toBe('stale');
    expect(await after).toBe('fresh');
    const next = deferred<string>();
    const third = flight.run('k', () => next.promise);
    const fourth = flight.run('k', async () => 'not used');
    next.resolve('shared');
    expect(await Promise.all([third, fourth])).toEqual(['shared', 'shared']);
  });
});
