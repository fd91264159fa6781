/**
 * How often `npm start`'s supervisor may restart something (the embedded Temporal dev server,
 * the in-process worker) before it gives up and exits non-zero, so that the supervisor above
 * it (systemd, Docker, Kubernetes, a shell loop) restarts the whole process instead.
 *
 * Schedule: the n-th restart inside the sliding window (n = 0, 1, 2, ...) waits
 * min(initialDelayMs * 2^n, maxDelayMs) before it starts. A restart that happened more than
 * windowMs ago no longer counts, so a server that crashes once a day is restarted every time
 * after initialDelayMs, while one that keeps crashing (or cannot start) exhausts the budget:
 * the (maxRestarts + 1)-th restart inside one window is refused.
 */
export interface RestartPolicy {
  initialDelayMs: number;
  maxDelayMs: number;
  maxRestarts: number;
  windowMs: number;
}

/** The cap of the doubling delay, whatever the initial delay. */
export const MAX_RESTART_DELAY_MS = 30_000;

export type RestartDecision = { restart: true; attempt: number; delayMs: number } | { restart: false; restartsInWindow: number };

export class RestartBudget {
  /** When each restart inside the window was granted, oldest first. */
  private readonly granted: number[] = [];

  constructor(
    private readonly policy: RestartPolicy,
    private readonly now: () => number = Date.now,
  ) {}

  /** Asks for one more restart: granted with its delay, or refused when the window is full. */
  next(): RestartDecision {
    const now = this.now();
    while (this.granted.length > 0 && now - this.granted[0] >= this.policy.windowMs) this.granted.shift();
    const n = this.granted.length;
    if (n >= this.policy.maxRestarts) return { restart: false, restartsInWindow: n };
    this.granted.push(now);
    return { restart: true, attempt: n + 1, delayMs: restartDelayMs(this.policy, n) };
  }
}

/** The wait before the n-th restart inside one window (n from 0). */
export function restartDelayMs(policy: Pick<RestartPolicy, 'initialDelayMs' | 'maxDelayMs'>, n: number): number {
  return Math.min(policy.initialDelayMs * 2 ** Math.min(n, 30), policy.maxDelayMs);
}
