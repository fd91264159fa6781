/**
 * ChannelHealth with an injected clock and random source: the order text channels are tried
 * in (priority, then a weighted random order), rest after consecutive failures, retry-after,
 * recovery, and the admin view.
 */
import type { TextChannel } from '../../src/config/channels';
import { ChannelHealth } from '../../src/proxy/channel-health';
import { seededRandom } from '../support/seeded-random';

function channel(name: string, priority = 0, weight = 1, extra: Partial<TextChannel> = {}): TextChannel {
  return {
    name,
    type: 'anthropic-native',
    baseUrl: `https://${name}.test`,
    apiKey: 'k',
    models: { 'cm-haiku-4.5': 'claude-haiku-4-5' },
    priority,
    weight,
    simulated: false,
    ...extra,
  };
}

/** Returns the given values in turn (and fails the test if it runs out). */
function sequence(values: number[]): () => number {
  let i = 0;
  return () => {
    const v = values[i++];
    if (v === undefined) throw new Error('random() called more often than expected');
    return v;
  };
}

const THRESHOLD = 3;
const COOLDOWN_MS = 30_000;
const START = 1_700_000_000_000;

let clock: number;
beforeEach(() => {
  clock = START;
});
const now = () => clock;

const names = (list: readonly TextChannel[]) => list.map((c) => c.name);

/** How often each channel is tried first over `draws` orders. */
function firstPicks(health: ChannelHealth, list: readonly TextChannel[], draws: number): Record<string, number> {
  const counts: Record<string, number> = Object.fromEntries(list.map((c) => [c.name, 0]));
  for (let i = 0; i < draws; i++) {
    const first = health.order(list)[0];
    if (first) counts[first.name] = (counts[first.name] ?? 0) + 1;
  }
  return counts;
}

describe('order', () => {
  test('highest priority first, whatever the random draws', () => {
    const health = new ChannelHealth(THRESHOLD, COOLDOWN_MS, now, seededRandom(1));
    const list = [channel('low', -1, 1000), channel('mid', 1), channel('top', 5), channel('zero', 0, 1000)];
    for (let i = 0; i < 200; i++) expect(names(health.order(list))).toEqual(['top', 'mid', 'zero', 'low']);
  });

  test('does not reorder or change the list it is given', () => {
    const health = new ChannelHealth(THRESHOLD, COOLDOWN_MS, now, seededRandom(2));
    const list = [channel('a', 0), channel('b', 9)];
    expect(names(health.order(list))).toEqual(['b', 'a']);
    expect(names(list)).toEqual(['a', 'b']);
  });

  test('an empty list gives an empty order', () => {
    expect(new ChannelHealth(THRESHOLD, COOLDOWN_MS, now, seededRandom(3)).order([])).toEqual([]);
  });

  test.each<[string, number[], number, number, string[]]>([
    // keys are u^(1/w); the larger key goes first
    ['equal weights: the larger draw first', [0.2, 0.9], 1, 1, ['b', 'a']],
    ['equal weights: the larger draw first (other way)', [0.9, 0.2], 1, 1, ['a', 'b']],
    ['weight 3 lifts 0.5 to 0.794, above 0.7', [0.5, 0.7], 3, 1, ['a', 'b']],
    ['weight 3 lifts 0.5 to 0.794, below 0.8', [0.5, 0.8], 3, 1, ['b', 'a']],
  ])('one draw per channel, in list order: %s', (_what, draws, weightA, weightB, expected) => {
    const health = new ChannelHealth(THRESHOLD, COOLDOWN_MS, now, sequence(draws));
    expect(names(health.order([channel('a', 0, weightA), channel('b', 0, weightB)]))).toEqual(expected);
  });

  test.each<[string, number[], number[]]>([
    ['weights 3:1', [3, 1], [0.75, 0.25]],
    ['weights 1:1', [1, 1], [0.5, 0.5]],
    ['weights 1:2:5', [1, 2, 5], [0.125, 0.25, 0.625]],
    ['weights 1:9', [1, 9], [0.1, 0.9]],
  ])('%s: the first pick follows the weights over 4000 draws', (_what, weights, shares) => {
    const list = weights.map((w, i) => channel(`c${i}`, 0, w));
    const health = new ChannelHealth(THRESHOLD, COOLDOWN_MS, now, seededRandom(20251122));
    const counts = firstPicks(health, list, 4000);
    // 4000 draws: one standard deviation is at most 0.8 percentage points; allow 3.
    list.forEach((c, i) => {
      expect(Math.abs((counts[c.name] ?? 0) / 4000 - (shares[i] ?? 0))).toBeLessThan(0.03);
    });
  });

  test('weights apply within a priority only: a heavy lower-priority channel never goes first', () => {
    const health = new ChannelHealth(THRESHOLD, COOLDOWN_MS, now, seededRandom(5));
    const list = [channel('heavy', 0, 1000), channel('a', 1, 1), channel('b', 1, 3)];
    const counts = firstPicks(health, list, 2000);
    expect(counts['heavy']).toBe(0);
    expect(Math.abs((counts['b'] ?? 0) / 2000 - 0.75)).toBeLessThan(0.04);
    for (let i = 0; i < 50; i++) expect(health.order(list)[2]?.name).toBe('heavy');
  });
});

describe("the operator's view", () => {
  const main = channel('main', 10);

  test('the newest five failures, newest first, with their time; cooldowns counted once per rest; failovers', () => {
    const health = new ChannelHealth(THRESHOLD, COOLDOWN_MS, now, seededRandom(7));
    for (let i = 1; i <= 7; i++) {
      clock = START + i * 1000;
      health.failed('main', `HTTP 50${i}`);
    }
    health.failedOver('main', 'server_error');
    const view = health.view([main])[0]!;
    expect(view.recent_errors).toEqual([7, 6, 5, 4, 3].map((i) => ({ at: (START + i * 1000) / 1000, message: `HTTP 50${i}` })));
    // Failures 3..7 all fall inside the one rest that failure 3 began.
    expect(view).toMatchObject({ cooldowns: 1, failovers: 1, failed: 7, last_error: 'HTTP 507' });
    clock = START + 7000 + COOLDOWN_MS;
    health.failed('main', 'HTTP 500');
    expect(health.view([main])[0]).toMatchObject({ cooldowns: 2 });
  });
});

describe('rest and recovery', () => {
  const main = channel('main', 10);
  const backup = channel('backup', 0);
  const list = [backup, main];

  function fresh(): ChannelHealth {
    return new ChannelHealth(THRESHOLD, COOLDOWN_MS, now, seededRandom(7));
  }

  test('fewer than N consecutive failures: still healthy and still first', () => {
    const health = fresh();
    health.failed('main', 'HTTP 503');
    health.failed('main', 'HTTP 503');
    expect(names(health.order(list))).toEqual(['main', 'backup']);
    expect(health.view([main])[0]).toMatchObject({ state: 'healthy', consecutive_failures: 2, failed: 2, resting_until: null });
  });

  test('N consecutive failures: rests for the cooldown, goes last but is still tried', () => {
    const health = fresh();
    for (let i = 0; i < THRESHOLD; i++) health.failed('main', 'HTTP 503');
    expect(names(health.order(list))).toEqual(['backup', 'main']);
    expect(health.view([main])[0]).toMatchObject({ state: 'resting', resting_until: Math.floor((START + COOLDOWN_MS) / 1000), consecutive_failures: 3 });
    // One millisecond before the end of the rest it still rests; at the end it is back.
    clock = START + COOLDOWN_MS - 1;
    expect(names(health.order(list))).toEqual(['backup', 'main']);
    clock = START + COOLDOWN_MS;
    expect(names(health.order(list))).toEqual(['main', 'backup']);
    expect(health.view([main])[0]?.state).toBe('healthy');
  });

  test('a success between failures resets the count: no rest', () => {
    const health = fresh();
    health.failed('main', 'HTTP 429');
    health.failed('main', 'HTTP 429');
    health.succeeded('main');
    health.failed('main', 'HTTP 429');
    health.failed('main', 'HTTP 429');
    expect(names(health.order(list))).toEqual(['main', 'backup']);
    expect(health.view([main])[0]).toMatchObject({ state: 'healthy', consecutive_failures: 2, served: 1, failed: 4 });
  });

  test('a retry-after longer than the cooldown extends the rest', () => {
    const health = fresh();
    health.failed('main', 'HTTP 429');
    health.failed('main', 'HTTP 429');
    health.failed('main', 'HTTP 429', 120_000);
    expect(health.view([main])[0]?.resting_until).toBe(Math.floor((START + 120_000) / 1000));
    clock = START + COOLDOWN_MS + 1;
    expect(names(health.order(list))).toEqual(['backup', 'main']);
    clock = START + 120_000;
    expect(names(health.order(list))).toEqual(['main', 'backup']);
  });

  test('a retry-after shorter than the cooldown does not shorten the rest', () => {
    const health = fresh();
    for (let i = 0; i < THRESHOLD; i++) health.failed('main', 'HTTP 429', 1000);
    expect(health.view([main])[0]?.resting_until).toBe(Math.floor((START + COOLDOWN_MS) / 1000));
  });

  test('a retry-after before the threshold is reached does not rest the channel', () => {
    const health = fresh();
    health.failed('main', 'HTTP 429', 600_000);
    expect(health.view([main])[0]?.state).toBe('healthy');
  });

  test('one success ends a rest at once', () => {
    const health = fresh();
    for (let i = 0; i < THRESHOLD; i++) health.failed('main', 'HTTP 500');
    health.succeeded('main');
    expect(names(health.order(list))).toEqual(['main', 'backup']);
    expect(health.view([main])[0]).toMatchObject({
      state: 'healthy',
      resting_until: null,
      consecutive_failures: 0,
      served: 1,
      failed: 3,
      last_error: 'HTTP 500',
    });
  });

  test('after the rest, one more failure sends it straight back to rest', () => {
    const health = fresh();
    for (let i = 0; i < THRESHOLD; i++) health.failed('main', 'HTTP 500');
    clock = START + COOLDOWN_MS + 5000;
    expect(health.view([main])[0]?.state).toBe('healthy');
    health.failed('main', 'connection refused');
    expect(names(health.order(list))).toEqual(['backup', 'main']);
    expect(health.view([main])[0]).toMatchObject({
      state: 'resting',
      resting_until: Math.floor((START + COOLDOWN_MS + 5000 + COOLDOWN_MS) / 1000),
      consecutive_failures: 4,
      last_error: 'connection refused',
    });
  });

  test('resting channels keep their priority order among themselves, after every healthy one', () => {
    const health = fresh();
    const all = [channel('r-low', 1), channel('ok-low', -5), channel('r-high', 9), channel('ok-high', 3)];
    for (let i = 0; i < THRESHOLD; i++) {
      health.failed('r-low', 'x');
      health.failed('r-high', 'x');
    }
    expect(names(health.order(all))).toEqual(['ok-high', 'ok-low', 'r-high', 'r-low']);
  });

  test('every channel resting: all are still offered, by priority', () => {
    const health = fresh();
    for (let i = 0; i < THRESHOLD; i++) {
      health.failed('main', 'x');
      health.failed('backup', 'x');
    }
    expect(names(health.order(list))).toEqual(['main', 'backup']);
  });

  test('channels are tracked by name, independently', () => {
    const health = fresh();
    for (let i = 0; i < THRESHOLD; i++) health.failed('backup', 'x');
    expect(health.view(list).map((v) => [v.name, v.state])).toEqual([
      ['backup', 'resting'],
      ['main', 'healthy'],
    ]);
  });
});

describe('view', () => {
  test('a channel never used: healthy, zero counts, its configuration', () => {
    const health = new ChannelHealth(THRESHOLD, COOLDOWN_MS, now, seededRandom(9));
    const c = channel('sim', 2, 4, { type: 'openai-compatible', models: { 'gpt-4o': 'gpt-4o', 'gpt-4.1': 'gpt-4.1' }, simulated: true });
    expect(health.view([c])).toEqual([
      {
        name: 'sim',
        type: 'openai-compatible',
        models: ['gpt-4o', 'gpt-4.1'],
        priority: 2,
        weight: 4,
        simulated: true,
        state: 'healthy',
        resting_until: null,
        consecutive_failures: 0,
        served: 0,
        failed: 0,
        last_error: null,
        failovers: 0,
        cooldowns: 0,
        recent_errors: [],
      },
    ]);
  });

  test('counts, the last error and the rest end in unix seconds', () => {
    const health = new ChannelHealth(2, 10_000, now, seededRandom(10));
    const c = channel('main', 1, 3);
    clock = START + 1500;
    health.succeeded('main');
    health.succeeded('main');
    health.failed('main', 'HTTP 502');
    health.failed('main', 'HTTP 529');
    expect(health.view([c])).toEqual([
      {
        name: 'main',
        type: 'anthropic-native',
        models: ['cm-haiku-4.5'],
        priority: 1,
        weight: 3,
        simulated: false,
        state: 'resting',
        resting_until: Math.floor((START + 1500 + 10_000) / 1000),
        consecutive_failures: 2,
        served: 2,
        failed: 2,
        last_error: 'HTTP 529',
        failovers: 0,
        cooldowns: 1,
        recent_errors: [
          { at: Math.floor((START + 1500) / 1000), message: 'HTTP 529' },
          { at: Math.floor((START + 1500) / 1000), message: 'HTTP 502' },
        ],
      },
    ]);
  });

  test('lists the channels given, in the order given', () => {
    const health = new ChannelHealth(THRESHOLD, COOLDOWN_MS, now, seededRandom(11));
    expect(health.view([channel('b', 0), channel('a', 9)]).map((v) => v.name)).toEqual(['b', 'a']);
  });
});
