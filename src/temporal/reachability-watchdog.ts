/**
 * A link to Temporal, watched: checks it every few seconds and calls onLost once it has not
 * answered for lostAfterMs. The standalone worker uses it to exit non-zero (the SDK retries a
 * worker's polls for ever, so without it a worker whose cluster is gone for good waits unseen:
 * a process that looks alive to its supervisor and does nothing); `npm start` uses it to kill a
 * dev server that runs but no longer answers, so that it is restarted like a crashed one.
 */
import type { Logger } from 'pino';

export interface ReachabilityWatchdogOptions {
  /** Resolves when Temporal answers (a cheap call with its own deadline). */
  check: () => Promise<void>;
  lostAfterMs: number;
  everyMs?: number;
  logger: Logger;
  onLost: (err: Error) => void;
  now?: () => number;
}

export interface Watchdog {
  stop(): void;
}

export function watchReachability(opts: ReachabilityWatchdogOptions): Watchdog {
  const now = opts.now ?? Date.now;
  const every = opts.everyMs ?? 5000;
  let lastAnswer = now();
  let down: Error | null = null;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const tick = async () => {
    try {
      await opts.check();
      if (down) opts.logger.warn({ downMs: now() - lastAnswer }, 'Temporal answers again');
      down = null;
      lastAnswer = now();
    } catch (err) {
      const first = !down;
      down = err instanceof Error ? err : new Error(String(err));
      const downMs = now() - lastAnswer;
      if (first) {
        opts.logger.warn({ err: down.message.split('\n')[0], lostAfterSeconds: Math.round(opts.lostAfterMs / 1000) }, 'Temporal does not answer');
      }
      if (downMs >= opts.lostAfterMs) {
        stopped = true;
        opts.onLost(new Error(`Temporal has not answered for ${Math.round(downMs / 1000)} s: ${down.message.split('\n')[0]}`));
        return;
      }
    }
    if (!stopped) timer = setTimeout(() => void tick(), every);
  };
  timer = setTimeout(() => void tick(), every);
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
