/**
 * Sleeps between the steps of a loop that a signal can stop: ends after `ms`, or as soon as the
 * signal aborts, and takes its abort listener off either way. Loops that sleep many times on one
 * long-lived signal (a watched job, a client's stream) must not leave a listener, or a promise
 * reaction, behind per turn: the SDK's Context.sleep chains one on the activity's `cancelled`
 * promise at every call, which stays reachable until the activity ends (about 1.4 KB each; a job
 * watched every 10 s up to its 3-hour deadline sleeps a thousand times).
 *
 * Resolves true when it slept the whole time, false when the signal aborted (at once if it
 * already had).
 */
export function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * An activity's sleep: like Context.sleep it rejects with the activity's cancellation (the
 * signal's reason, the SDK's CancelledFailure), but keeps nothing once it has slept.
 */
export async function sleepUnlessCancelled(signal: AbortSignal, ms: number): Promise<void> {
  if (!(await sleepUnlessAborted(ms, signal))) throw signal.reason;
}
