import pino from 'pino';
import { startBillingReconciler } from '../../src/billing/reconciler';
import type { EdgeOutcome } from '../../src/billing/charge-lifecycle';
import type { BilledTaskKind } from '../../src/billing/ledger';

type Outcome = 'missing' | 'running' | 'completed' | 'failed';

/**
 * The reconciler's decisions against a store and a task service kept in memory: which charge
 * each path settles, and how. The real store and Temporal are covered by test/e2e/billing.test.ts.
 */
function setup(
  opts: {
    due?: string[];
    outcomes?: Record<string, Outcome>;
    stopped?: string[] | Error;
    intervalSeconds?: number;
    sweepSeconds?: number;
    storeDown?: { down: boolean };
  } = {},
) {
  const calls: string[] = [];
  const sweeps: Date[] = [];
  const running = new Set([...(opts.due ?? []), ...(Array.isArray(opts.stopped) ? opts.stopped : [])]);
  const billing = {
    async chargesDueForCheck() {
      return (opts.due ?? []).map((taskId) => ({ taskId, keyId: 'key_1', kind: (taskId.startsWith('resp_') ? 'response' : 'video') as BilledTaskKind }));
    },
    async refundTask(taskId: string, reason: string, edge: 'refund' | 'refundUnstarted' = 'refund'): Promise<EdgeOutcome> {
      if (opts.storeDown?.down) throw new Error('store unavailable');
      calls.push(`${edge === 'refund' ? 'refund' : 'refund unstarted'} ${taskId}: ${reason}`);
      return running.delete(taskId) ? 'moved' : 'refunded';
    },
    async completeTask(taskId: string): Promise<EdgeOutcome> {
      calls.push(`complete ${taskId}`);
      return running.delete(taskId) ? 'moved' : 'completed';
    },
    async checkAgainLater(taskIds: readonly string[]) {
      if (taskIds.length > 0) calls.push(`later ${taskIds.join(',')}`);
    },
  };
  const tasks = {
    async outcome(id: string): Promise<Outcome> {
      return opts.outcomes?.[id] ?? 'running';
    },
    async stoppedSince(since: Date): Promise<string[]> {
      sweeps.push(since);
      if (opts.stopped instanceof Error) throw opts.stopped;
      return opts.stopped ?? [];
    },
  };
  const views = {
    async forget(taskIds: readonly string[]) {
      if (taskIds.length > 0) calls.push(`forget views ${taskIds.join(',')}`);
    },
    async prune() {
      return 0;
    },
  };
  const reconciler = startBillingReconciler(
    billing,
    tasks,
    views,
    { intervalSeconds: opts.intervalSeconds ?? 0, sweepSeconds: opts.sweepSeconds ?? 0, minAgeSeconds: 10 },
    pino({ level: 'silent' }),
  );
  return { reconciler, calls, sweeps };
}

describe('billing reconciler', () => {
  it("releases a background response's hold whose run completed without settling it, never completes it", async () => {
    const { reconciler, calls } = setup({ due: ['resp_1', 't_video'], outcomes: { resp_1: 'completed', t_video: 'completed' } });
    expect(await reconciler.runOnce()).toBe(2);
    expect(calls).toEqual(["refund resp_1: the task's workflow ended without finishing", 'complete t_video']);
  });

  it('refunds the runs stopped from outside that visibility reports, once: later sweeps that see them again skip them', async () => {
    const { reconciler, calls } = setup({ stopped: ['t_stopped'] });
    expect(await reconciler.runOnce()).toBe(1);
    expect(await reconciler.sweepOnce()).toBe(0);
    expect(await reconciler.runOnce()).toBe(0);
    // Its view is dropped first, so its reads ask Temporal, which knows it was stopped.
    expect(calls).toEqual(['forget views t_stopped', "refund t_stopped: the task's workflow ended without finishing"]);
  });

  it('sweeps for stopped runs on a timer of its own, between passes', async () => {
    const { reconciler, calls, sweeps } = setup({ stopped: ['t_stopped'], intervalSeconds: 3600, sweepSeconds: 0.05 });
    try {
      await new Promise((r) => setTimeout(r, 400));
      expect(sweeps.length).toBeGreaterThanOrEqual(2);
      expect(calls).toEqual(['forget views t_stopped', "refund t_stopped: the task's workflow ended without finishing"]);
    } finally {
      reconciler.stop();
    }
    const stoppedAt = sweeps.length;
    await new Promise((r) => setTimeout(r, 200));
    expect(sweeps).toHaveLength(stoppedAt);
  });

  it('a sweep whose refund fails leaves the run to the next sweep', async () => {
    const storeDown = { down: true };
    const { reconciler, calls } = setup({ stopped: ['t_stopped'], storeDown });
    await expect(reconciler.sweepOnce()).rejects.toThrow('store unavailable');
    storeDown.down = false;
    expect(await reconciler.sweepOnce()).toBe(1);
    expect(await reconciler.sweepOnce()).toBe(0);
    expect(calls).toEqual(['forget views t_stopped', 'forget views t_stopped', "refund t_stopped: the task's workflow ended without finishing"]);
  });

  it('sweeps from an hour back first, then from a minute before the previous sweep began', async () => {
    // Taken before the reconciler starts: its first sweep reaches back from its start.
    const before = Date.now();
    const { reconciler, sweeps } = setup();
    await reconciler.runOnce();
    const secondFrom = Date.now();
    await reconciler.runOnce();
    const after = Date.now();
    expect(sweeps).toHaveLength(2);
    expect(sweeps[0]!.getTime()).toBeGreaterThanOrEqual(before - 3_600_000);
    expect(sweeps[0]!.getTime()).toBeLessThanOrEqual(secondFrom - 3_600_000);
    expect(sweeps[1]!.getTime()).toBeGreaterThanOrEqual(before - 60_000);
    expect(sweeps[1]!.getTime()).toBeLessThanOrEqual(after - 60_000);
  });

  it('settles due charges by their workflow: missing and failed refunded, completed kept, running looked at later', async () => {
    const { reconciler, calls } = setup({
      due: ['t_missing', 't_failed', 't_completed', 't_running'],
      outcomes: { t_missing: 'missing', t_failed: 'failed', t_completed: 'completed', t_running: 'running' },
    });
    expect(await reconciler.runOnce()).toBe(3);
    expect(calls).toEqual([
      'refund unstarted t_missing: the task never started',
      "refund t_failed: the task's workflow ended without finishing",
      'complete t_completed',
      'later t_running',
    ]);
  });

  it('still settles due charges when the visibility query fails', async () => {
    const { reconciler, calls } = setup({ due: ['t_failed'], outcomes: { t_failed: 'failed' }, stopped: new Error('visibility unavailable') });
    expect(await reconciler.runOnce()).toBe(1);
    expect(calls).toEqual(["refund t_failed: the task's workflow ended without finishing"]);
  });
});
