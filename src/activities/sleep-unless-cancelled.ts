/**
 * An activity's sleep between polls that keeps nothing once it has slept. The SDK's
 * Context.sleep chains a reaction on the activity's `cancelled` promise at every call, and that
 * promise settles only if the activity is cancelled, so each call stays reachable until the
 * activity ends (about 1.4 KB: the reaction, its closure, the timer, the race's promise). A job
 * watched every 10 s up to its 3-hour deadline sleeps a thousand times: a megabyte per task,
 * gigabytes across 10,000 tasks in flight. This one takes its abort listener off when it wakes.
 *
 * Like Context.sleep it rejects with the cancellation (the signal's reason, the SDK's
 * CancelledFailure), at once if the activity is already cancelled.
 */
export function sleepUnlessCancelled(signal: AbortSignal, ms: number): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
