/**
 * The pure parts of `npm start`'s supervision: the restart schedule and budget, the standalone
 * worker's reachability watchdog, and the in-process worker's replacement logic (driven with
 * stand-in workers; the real worker and a real dev server are in test/e2e/supervision*.test.ts).
 */
import { createLogger } from '../../src/log';
import { watchReachability } from '../../src/temporal/reachability-watchdog';
import { MAX_RESTART_DELAY_MS, RestartBudget, restartDelayMs, type RestartPolicy } from '../../src/temporal/restart-budget';
import { WorkerSupervisor, type SupervisableWorker } from '../../src/temporal/worker-supervisor';

const logger = createLogger('silent');

describe('RestartBudget', () => {
  const policy: RestartPolicy = { initialDelayMs: 1000, maxDelayMs: MAX_RESTART_DELAY_MS, maxRestarts: 5, windowMs: 600_000 };

  it('doubles the delay from the initial one up to 30 s', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 40].map((n) => restartDelayMs(policy, n))).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
    expect(restartDelayMs({ initialDelayMs: 0, maxDelayMs: 30_000 }, 3)).toBe(0);
  });

  it('grants maxRestarts restarts inside one window with the documented delays, then refuses', () => {
    let now = 0;
    const budget = new RestartBudget(policy, () => now);
    const granted = [];
    for (let i = 0; i < 5; i++) {
      granted.push(budget.next());
      now += 10_000;
    }
    expect(granted).toEqual([1, 2, 3, 4, 5].map((attempt) => ({ restart: true, attempt, delayMs: 1000 * 2 ** (attempt - 1) })));
    expect(budget.next()).toEqual({ restart: false, restartsInWindow: 5 });
    expect(budget.next()).toEqual({ restart: false, restartsInWindow: 5 });
  });

  it('forgets restarts older than the window: an occasional crash is always restarted after the initial delay', () => {
    let now = 0;
    const budget = new RestartBudget(policy, () => now);
    for (let day = 0; day < 20; day++) {
      expect(budget.next()).toEqual({ restart: true, attempt: 1, delayMs: 1000 });
      now += policy.windowMs;
    }
  });

  it('slides: the oldest restart leaving the window frees one slot, at the delay of its position', () => {
    let now = 0;
    const budget = new RestartBudget({ ...policy, maxRestarts: 3, windowMs: 100 }, () => now);
    expect(budget.next()).toMatchObject({ restart: true, attempt: 1 });
    now = 40;
    expect(budget.next()).toMatchObject({ restart: true, attempt: 2 });
    now = 80;
    expect(budget.next()).toMatchObject({ restart: true, attempt: 3, delayMs: 4000 });
    now = 99;
    expect(budget.next()).toMatchObject({ restart: false });
    now = 100; // the restart at 0 has left the window
    expect(budget.next()).toEqual({ restart: true, attempt: 3, delayMs: 4000 });
  });

  it('with maxRestarts 0, refuses the first restart', () => {
    expect(new RestartBudget({ ...policy, maxRestarts: 0 }).next()).toEqual({ restart: false, restartsInWindow: 0 });
  });
});

describe('watchReachability', () => {
  const until = async (cond: () => boolean, ms = 5000) => {
    const deadline = Date.now() + ms;
    while (!cond()) {
      if (Date.now() > deadline) throw new Error('condition not met');
      await new Promise((r) => setTimeout(r, 5));
    }
  };

  it('calls onLost once Temporal has not answered for lostAfterMs, and stops checking', async () => {
    let now = 0;
    let checks = 0;
    const lost: Error[] = [];
    watchReachability({
      check: async () => {
        checks += 1;
        now += 1000;
        throw new Error('14 UNAVAILABLE: connection refused');
      },
      lostAfterMs: 5000,
      everyMs: 1,
      logger,
      onLost: (err) => lost.push(err),
      now: () => now,
    });
    await until(() => lost.length > 0);
    await new Promise((r) => setTimeout(r, 30));
    expect(lost).toHaveLength(1);
    expect(lost[0]!.message).toMatch(/has not answered for 5 s: 14 UNAVAILABLE/);
    expect(checks).toBe(5);
  });

  it('an answer inside the bound resets it: a flapping Temporal never counts as lost', async () => {
    let now = 0;
    let checks = 0;
    const lost: Error[] = [];
    const dog = watchReachability({
      check: async () => {
        checks += 1;
        now += 1000;
        if (checks % 4 !== 0) throw new Error('down');
      },
      lostAfterMs: 5000,
      everyMs: 1,
      logger,
      onLost: (err) => lost.push(err),
      now: () => now,
    });
    await until(() => checks >= 40);
    dog.stop();
    expect(lost).toEqual([]);
  });
});

/** A stand-in for the SDK's Worker: run() settles when the test says so. */
class FakeWorker implements SupervisableWorker {
  state = 'INITIALIZED';
  readonly options: { identity: string };
  private settle!: { resolve: () => void; reject: (err: Error) => void };

  constructor(identity: string) {
    this.options = { identity };
  }

  run(): Promise<void> {
    this.state = 'RUNNING';
    return new Promise<void>((resolve, reject) => {
      this.settle = { resolve, reject };
    });
  }

  shutdown(): void {
    if (this.state !== 'RUNNING') throw new Error('not running');
    this.state = 'STOPPED';
    this.settle.resolve();
  }

  fail(message: string): void {
    this.state = 'FAILED';
    this.settle.reject(new Error(message));
  }

  getState(): string {
    return this.state;
  }
}

function supervised(opts: { polling?: (identity: string) => boolean; maxRestarts?: number; failCreateAfter?: number } = {}) {
  const made: FakeWorker[] = [];
  const givenUp: Error[] = [];
  const supervisor = new WorkerSupervisor<FakeWorker>({
    create: async () => {
      if (opts.failCreateAfter !== undefined && made.length >= opts.failCreateAfter) throw new Error('cannot create');
      const worker = new FakeWorker(`worker-${made.length + 1}`);
      made.push(worker);
      return worker;
    },
    isPolling: async (identity) => (opts.polling ?? (() => true))(identity),
    policy: { initialDelayMs: 0, maxDelayMs: 0, maxRestarts: opts.maxRestarts ?? 3, windowMs: 60_000 },
    logger,
    onGiveUp: (err) => givenUp.push(err),
    pollCheckMs: 30,
    pollCheckEveryMs: 5,
  });
  return { supervisor, made, givenUp };
}

const settle = () => new Promise((r) => setTimeout(r, 20));

describe('WorkerSupervisor', () => {
  it('replaces a worker whose run() fails', async () => {
    const { supervisor, made, givenUp } = supervised();
    await supervisor.start();
    made[0]!.fail('fatal: the SDK gave up');
    await settle();
    expect(made).toHaveLength(2);
    expect(supervisor.running()).toBe(true);
    expect(supervisor.describe()).toBe('ok');
    expect(givenUp).toEqual([]);
    await supervisor.stop();
    expect(made[1]!.state).toBe('STOPPED');
  });

  it('gives up when failures outrun the budget', async () => {
    const { supervisor, made, givenUp } = supervised({ maxRestarts: 2 });
    await supervisor.start();
    for (let i = 0; i < 3; i++) {
      made[i]!.fail(`fatal ${i}`);
      await settle();
    }
    expect(made).toHaveLength(3);
    expect(givenUp).toHaveLength(1);
    expect(givenUp[0]!.message).toMatch(/fatal 2; the worker was replaced 2 times within 60 s/);
    expect(supervisor.describe()).toBe('failed');
  });

  it('gives up when no replacement can be created', async () => {
    const { supervisor, made, givenUp } = supervised({ maxRestarts: 2, failCreateAfter: 1 });
    await supervisor.start();
    made[0]!.fail('fatal');
    await settle();
    expect(made).toHaveLength(1);
    expect(givenUp).toHaveLength(1);
  });

  it('after a Temporal restart: a worker seen polling is kept', async () => {
    const { supervisor, made, givenUp } = supervised();
    await supervisor.start();
    await supervisor.verifyPolling();
    expect(made).toHaveLength(1);
    expect(givenUp).toEqual([]);
  });

  it('after a Temporal restart: a worker not seen polling is replaced, and the replacement kept when it polls', async () => {
    const { supervisor, made, givenUp } = supervised({ polling: (identity) => identity === 'worker-2' });
    await supervisor.start();
    await supervisor.verifyPolling();
    expect(made).toHaveLength(2);
    expect(made[0]!.state).toBe('STOPPED');
    expect(supervisor.running()).toBe(true);
    expect(givenUp).toEqual([]);
  });

  it('after a Temporal restart: gives up when the replacement does not poll either', async () => {
    const { supervisor, made, givenUp } = supervised({ polling: () => false });
    await supervisor.start();
    await supervisor.verifyPolling();
    expect(made).toHaveLength(2);
    expect(givenUp).toHaveLength(1);
    expect(givenUp[0]!.message).toMatch(/does not poll the task queue/);
  });

  it('a worker stopped by stop() is not replaced', async () => {
    const { supervisor, made, givenUp } = supervised();
    await supervisor.start();
    await supervisor.stop();
    await settle();
    expect(made).toHaveLength(1);
    expect(made[0]!.state).toBe('STOPPED');
    expect(givenUp).toEqual([]);
  });
});
