import { sleepUnlessAborted } from '../system/abortable-sleep';
import { isTerminal, type TaskState } from './task';

/**
 * Follows a task until it ends, calling onChange with each state whose status or progress
 * differs from the last one seen. Progress handed on never decreases. Stops early when the
 * signal aborts (a client went away); the task itself runs on regardless.
 */
export async function watchTask(
  read: () => Promise<TaskState | null>,
  onChange: (state: TaskState) => void,
  opts: { everyMs: number; signal: AbortSignal },
): Promise<TaskState | null> {
  let last: TaskState | null = null;
  while (!opts.signal.aborted) {
    const state = await read();
    if (!state) return last;
    const previous: TaskState | null = last;
    if (previous === null || state.status !== previous.status || state.progress > previous.progress) {
      const next: TaskState = { ...state, progress: Math.max(state.progress, previous?.progress ?? 0) };
      last = next;
      onChange(next);
    }
    if (isTerminal(state.status)) return last;
    await sleepUnlessAborted(opts.everyMs, opts.signal);
  }
  return last;
}
