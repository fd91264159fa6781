/**
 * The sink through which a video task's workflow publishes its state to its task view
 * (tasks/task-views.ts) beside the memo. A sink is no command and leaves no history event; the
 * worker calls it once the workflow task's code has run and before it completes, and never on
 * replay, so a view is written when the state changes, not each time a run is replayed.
 */
import type { Sinks } from '@temporalio/workflow';
import type { TaskState } from '../tasks/task';

export interface TaskViewSinks extends Sinks {
  taskViews: {
    /** `seq` grows with every publish of a task, across its runs (taskViewSeq). */
    publish(state: TaskState, seq: number): void;
  };
}

/** A run's publishes counted in its sequence numbers: a run publishes a few dozen times, once per change of its state. */
const COUNTED_PUBLISHES = 1000;

/**
 * The sequence number of a run's `nth` publish: the run's start (ms) ahead of the count, so a
 * run continued as new publishes above every publish of the run before it. Below 2^53 until
 * the year 2255.
 */
export function taskViewSeq(runStartTime: Date, nth: number): number {
  return runStartTime.getTime() * COUNTED_PUBLISHES + Math.min(nth, COUNTED_PUBLISHES - 1);
}
