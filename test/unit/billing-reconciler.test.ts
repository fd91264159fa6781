import pino from 'pino';
import { startBillingReconciler } from '../../src/billing/reconciler';
import type { EdgeOutcome } from '../../src/billing/charge-lifecycle';
import type { BilledTaskKind } from '../../src/billing/ledger';
import { SWEEP_PAGE_SIZE, SWEEP_PAGES } from '../../src/billing/stopped-sweep';
import type { StoppedPage } from '../../src/tasks/task-service';

type Outcome = 'missing' | 'running' | 'completed' | 'failed';

/**
 * The reconciler's decisions against a store and a task service kept in memory: which charge
 * each path settles, and how. The real store and Temporal are covered by test/e2e/billing.test.ts.
 */
function setup(
  opts: {
    due?: string[];
    outcomes?: Record<string, Outcome>;
    /** Runs stopped from outside, closed now; or the visibility query's error. */
    stopped?: string[] | Error;
    /** Runs stopped from outside with their close (ms epoch); more may be pushed between sweeps. */
    stoppedRuns?: StoppedRun[];
    intervalSeconds?: number;
    sweepSeconds?: number;
    storeDown?: { down: boolean };
    /** Visibility's pages fail while this is down. */
    failPagesWhile?: { down: boolean };
  } = {},
) {
  const calls: string[] = [];
  /** The start of each sweep's fresh window (a page asked with no upper bound). */
  const sweeps: Date[] = [];
  /** Every page asked. */
  const pages: Array<{ from: number; before: number | null }> = [];
  const closedAt = Date.now();
  const stoppedRuns: StoppedRun[] = opts.stoppedRuns ?? (Array.isArray(opts.stopped) ? opts.stopped.map((id) => ({ id, closeMs: closedAt })) : []);
  const running = new Set([...(opts.due ?? []), ...stoppedRuns.map((r) => r.id)]);
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
    /** Visibility's page: the window's runs newest close first (ties in the order given), one more than the limit telling that more are left. */
    async stoppedBetween(from: Date, before: Date | null, limit: number): Promise<StoppedPage> {
      if (before === null) sweeps.push(from);
      pages.push({ from: from.getTime(), before: before?.getTime() ?? null });
      if (opts.stopped instanceof Error) throw opts.stopped;
      if (opts.failPagesWhile?.down) throw new Error('visibility unavailable');
      const inWindow = stoppedRuns
        .filter((r) => r.closeMs > from.getTime() && (before === null || r.closeMs < before.getTime()))
        .sort((a, b) => b.closeMs - a.closeMs)
        .slice(0, limit + 1);
      const page = inWindow.slice(0, limit);
      return { ids: page.map((r) => r.id), oldestClose: page.length > 0 ? new Date(page[page.length - 1]!.closeMs) : null, more: inWindow.length > limit };
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
  return { reconciler, calls, sweeps, pages, stoppedRuns, running };
}

interface StoppedRun {
  id: string;
  closeMs: number;
}

/** `n` runs stopped one millisecond apart, the newest `newestMs` ago. */
function stoppedOverTime(prefix: string, n: number, newestMs: number): StoppedRun[] {
  const newest = Date.now() - newestMs;
  return Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, closeMs: newest - i }));
}

const refunded = (calls: string[]) => calls.filter((c) => c.startsWith('refund ')).map((c) => c.slice('refund '.length).split(':')[0]!);

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

  it("reads a mass stop past one sweep's pages over the next sweeps, newest first, each run refunded once; a run stopped meanwhile by the walk after", async () => {
    const perSweep = SWEEP_PAGES * SWEEP_PAGE_SIZE;
    const mass = stoppedOverTime('t_mass_', perSweep * 2 + 700, 10_000);
    const { reconciler, calls, stoppedRuns, running, pages } = setup({ stoppedRuns: [...mass] });
    const first = await reconciler.sweepOnce();
    // One sweep reads its pages and no more (each page after the first repeats the previous one's last millisecond).
    expect(pages).toHaveLength(SWEEP_PAGES);
    expect(first).toBeGreaterThan(perSweep - SWEEP_PAGES);
    expect(first).toBeLessThanOrEqual(perSweep);
    stoppedRuns.push({ id: 't_new', closeMs: Date.now() });
    running.add('t_new');
    const settledBySweep: number[] = [];
    for (let settled = -1; settled !== 0;) settledBySweep.push((settled = await reconciler.sweepOnce()));
    expect(running.size).toBe(0);
    // The walk through the mass stop in its order, newest first; then the next walk finds the new run.
    expect(refunded(calls)).toEqual([...mass.map((r) => r.id), 't_new']);
    // Two more sweeps finish the walk; the next walk (from a minute before the first began) takes two, and the last finds nothing.
    expect(settledBySweep.length).toBeLessThanOrEqual(5);
  });

  it('moves past a millisecond that holds more stopped runs than a page, and ends', async () => {
    const closeMs = Date.now() - 5_000;
    const sameMs = Array.from({ length: SWEEP_PAGE_SIZE + 100 }, (_, i) => ({ id: `t_same_${i}`, closeMs }));
    const older = stoppedOverTime('t_older_', 300, 6_000);
    const { reconciler, calls, pages } = setup({ stoppedRuns: [...sameMs, ...older] });
    await reconciler.sweepOnce();
    // Every older run is reached; of the millisecond's runs, a page's worth (the rest are left to their charges' due looks).
    expect(refunded(calls).filter((id) => id.startsWith('t_older_'))).toHaveLength(300);
    expect(refunded(calls).filter((id) => id.startsWith('t_same_'))).toHaveLength(SWEEP_PAGE_SIZE);
    expect(pages.length).toBeLessThan(SWEEP_PAGES);
    expect(new Set(refunded(calls)).size).toBe(refunded(calls).length);
  });

  it('a visibility outage in the middle of a walk through a mass stop: the sweep after it goes on from the same page', async () => {
    const perSweep = SWEEP_PAGES * SWEEP_PAGE_SIZE;
    const mass = stoppedOverTime('t_mass_', perSweep + 200, 10_000);
    const visibility = { down: false };
    const { reconciler, running } = setup({ stoppedRuns: mass, failPagesWhile: visibility });
    const first = await reconciler.sweepOnce();
    expect(running.size).toBe(mass.length - first);
    visibility.down = true;
    expect(await reconciler.sweepOnce()).toBe(0);
    visibility.down = false;
    expect(await reconciler.sweepOnce()).toBe(mass.length - first);
    expect(running.size).toBe(0);
  });

  it('still settles due charges when the visibility query fails', async () => {
    const { reconciler, calls } = setup({ due: ['t_failed'], outcomes: { t_failed: 'failed' }, stopped: new Error('visibility unavailable') });
    expect(await reconciler.runOnce()).toBe(1);
    expect(calls).toEqual(["refund t_failed: the task's workflow ended without finishing"]);
  });
});
