/**
 * Retry budgets in attempts: a local activity's retries inside the SDK do not stop at its
 * scheduleToCloseTimeout, so a wait bounded in time is also bounded in attempts. Pure, and
 * imported by workflow code.
 */

export interface Backoff {
  initialInterval: number;
  backoffCoefficient: number;
  maximumInterval: number;
}

/** How many attempts fit in `timeoutMs` of backoff: the first, and one after each interval. */
export function attemptsWithin(timeoutMs: number, retry: Backoff): number {
  let attempts = 1;
  for (let waited = 0, interval = retry.initialInterval; waited < timeoutMs; attempts++) {
    waited += interval;
    interval = Math.min(interval * retry.backoffCoefficient, retry.maximumInterval);
  }
  return attempts;
}
