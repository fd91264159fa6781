import { PerKeySlots } from '../limits/per-key-slots';
import { withFetchedFile, type FetchedFile, type GuardedFetchOptions } from './url-guard';

/** What the worker fetches user URLs (reference images, character clips) with. */
export interface UserUrlFetchSettings {
  allowPrivate: boolean;
  maxBytes: number;
  /** FETCH_TIMEOUT_MS: the whole of one fetch, redirects included. */
  deadlineMs: number;
  /** Longest silence of a connection; below deadlineMs it cuts a silent server sooner. */
  idleTimeoutMs: number;
  /** FETCH_MAX_PER_KEY: one key's fetching steps in flight in this worker process. */
  maxPerKey: number;
  tempDir: string;
}

/** Fetches one URL into a temporary file for `use`; the file is gone once the promise settles. */
export type FetchFile = <T>(url: string, use: (file: FetchedFile) => Promise<T>) => Promise<T>;

/** The key already has FETCH_MAX_PER_KEY fetching steps in flight here; come back after retryAfterMs. */
export class FetchSlotsBusyError extends Error {
  constructor(
    readonly maxPerKey: number,
    readonly retryAfterMs: number,
  ) {
    super(`this key already has ${maxPerKey} user-URL fetches in flight; retrying shortly`);
  }
}

/** Spread so that the steps a busy key turned away do not all come back at the same moment. */
const BUSY_RETRY_MIN_MS = 2000;
const BUSY_RETRY_SPREAD_MS = 3000;

/**
 * User-URL fetches of the worker. A fetching step (one activity attempt: a task's reference
 * images, or a character's clip) holds one of its key's slots while its URLs are fetched, all
 * at once, each within the deadline; a failure of one aborts the others, and so does the
 * caller's signal (the activity's cancellation).
 */
export class UserUrlFetcher {
  readonly slots: PerKeySlots;

  constructor(readonly settings: UserUrlFetchSettings) {
    this.slots = new PerKeySlots(settings.maxPerKey);
  }

  async forKey<T>(key: string, signal: AbortSignal | undefined, work: (fetchFile: FetchFile) => Promise<T>): Promise<T> {
    const release = this.slots.tryAcquire(key);
    if (!release) throw new FetchSlotsBusyError(this.settings.maxPerKey, BUSY_RETRY_MIN_MS + Math.floor(Math.random() * BUSY_RETRY_SPREAD_MS));
    const step = new AbortController();
    const stepSignal = signal ? AbortSignal.any([signal, step.signal]) : step.signal;
    const options: GuardedFetchOptions = { ...this.settings, signal: stepSignal };
    const fetches = new Set<Promise<unknown>>();
    const fetchFile: FetchFile = (url, use) => {
      const fetching = withFetchedFile(url, options, use).catch((err: unknown) => {
        step.abort(err);
        throw err;
      });
      fetches.add(fetching);
      return fetching;
    };
    try {
      return await work(fetchFile);
    } finally {
      // The step ends when its last fetch has (its siblings aborted, every file removed), not
      // when the first failure reaches Promise.all: only then is the slot free again.
      step.abort(new Error('the fetching step ended'));
      await Promise.allSettled(fetches);
      release();
    }
  }
}
