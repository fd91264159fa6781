/**
 * The sleeps of loops that a signal stops (src/system/abortable-sleep.ts): they wake, an abort
 * ends them, the activities' one rejects with the cancellation like Context.sleep, and unlike
 * Context.sleep many sleeps on one signal leave nothing behind.
 */
import { getEventListeners, setMaxListeners } from 'node:events';
import v8 from 'node:v8';
import vm from 'node:vm';
import { Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { sleepUnlessAborted, sleepUnlessCancelled } from '../../src/system/abortable-sleep';

// A full collection on demand, without --expose-gc on jest's command line.
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

const SLEEPS = 10_000;

/** Heap bytes still reachable after `sleeps` sleeps of 0 ms by `sleep` inside one activity, once they have all woken. */
async function retainedBy(sleep: (ctx: Context) => Promise<void>, sleeps: number): Promise<number> {
  return new MockActivityEnvironment().run(async () => {
    const ctx = Context.current();
    // All the sleeps wait on this one signal at once, by design: without this, Node warns of a
    // possible leak (MaxListenersExceededWarning) past ten listeners.
    setMaxListeners(sleeps + 1, ctx.cancellationSignal);
    await sleep(ctx); // the first call's one-time costs
    gc();
    const before = process.memoryUsage().heapUsed;
    // All at once, so that they wake in the same turn of the timers rather than a millisecond apart.
    await Promise.all(Array.from({ length: sleeps }, () => sleep(ctx)));
    gc();
    return process.memoryUsage().heapUsed - before;
  });
}

test('sleeps for the time asked', async () => {
  const started = Date.now();
  await new MockActivityEnvironment().run(() => sleepUnlessCancelled(Context.current().cancellationSignal, 50));
  expect(Date.now() - started).toBeGreaterThanOrEqual(45);
});

test("a cancel wakes it with the activity's CancelledFailure, and a cancelled activity does not sleep", async () => {
  const env = new MockActivityEnvironment();
  const asleep = env.run(() => sleepUnlessCancelled(Context.current().cancellationSignal, 60_000));
  env.cancel('CANCELLED');
  await expect(asleep).rejects.toBeInstanceOf(CancelledFailure);
  const signal = AbortSignal.abort(new CancelledFailure('CANCELLED'));
  await expect(sleepUnlessCancelled(signal, 60_000)).rejects.toBeInstanceOf(CancelledFailure);
});

test('sleeping many times in one activity keeps nothing, where Context.sleep keeps every call', async () => {
  const ours = await retainedBy((ctx) => sleepUnlessCancelled(ctx.cancellationSignal, 0), SLEEPS);
  const sdks = await retainedBy((ctx) => ctx.sleep(0), SLEEPS);
  // The SDK's: about 1.4 KB a call (Node 20). Ours: 10-20 bytes, noise.
  expect(sdks / SLEEPS).toBeGreaterThan(500);
  expect(ours / SLEEPS).toBeLessThan(100);
});

test('a loop sleeping on one signal leaves no listener on it; an abort ends the sleep early with false', async () => {
  const stop = new AbortController();
  for (let i = 0; i < 20; i++) expect(await sleepUnlessAborted(0, stop.signal)).toBe(true);
  expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
  const started = Date.now();
  const asleep = sleepUnlessAborted(60_000, stop.signal);
  stop.abort();
  expect(await asleep).toBe(false);
  expect(Date.now() - started).toBeLessThan(1000);
  expect(await sleepUnlessAborted(60_000, stop.signal)).toBe(false);
});
