/**
 * The sweep of runs stopped from outside (an operator's terminate or cancel, a run timeout):
 * such a run never reaches its own settle step, so the sweep drops its task view and refunds
 * its charge. A walk lists, through Temporal's visibility, the runs of the gateway's task queue
 * that closed that way since a minute before the previous walk began (visibility records a close
 * a little after it happens, so walks overlap; a run handled by this walk or the one before is
 * skipped when seen again).
 *
 * A walk reads newest close first, a page at a time, each page asking for closes before the
 * previous page's oldest. One sweep reads at most SWEEP_PAGES pages: a walk through a mass stop
 * larger than that goes on at the next sweeps from where it stopped, so every stopped run is
 * reached without a sweep growing with the size of the stop; runs stopped meanwhile are read by
 * the walk after it. A walk that Temporal or the store interrupted goes on from the same page.
 * Closes are compared to the millisecond: of more runs than a page closed in one millisecond, those
 * past the page are left to their charges' due looks.
 */
import type { Logger } from 'pino';
import type { BillingStore } from './ledger';
import type { TaskService } from '../tasks/task-service';
import type { TaskViews } from '../tasks/task-views';

/** How far back the first walk looks, so a restart does not skip recent stops. */
const FIRST_WALK_LOOKBACK_MS = 60 * 60_000;
/** Each walk starts this long before the previous one began: visibility records closes late. */
const WALK_OVERLAP_MS = 60_000;
/** Runs per visibility page. */
export const SWEEP_PAGE_SIZE = 500;
/** Pages one sweep reads at most (5,000 runs): a mass stop past that is spread over the next sweeps. */
export const SWEEP_PAGES = 10;
export const STOPPED_REASON = "the task's workflow ended without finishing";

/** A walk: closes after `from`, and before `before` once a page has been read (ms epoch). */
interface Walk {
  from: number;
  before: number | null;
  startedAt: number;
}

export function stoppedRunsSweep(
  billing: Pick<BillingStore, 'refundTask'>,
  tasks: Pick<TaskService, 'stoppedBetween'>,
  views: Pick<TaskViews, 'forget'>,
  logger: Logger,
): () => Promise<number> {
  let walkFrom = Date.now() - FIRST_WALK_LOOKBACK_MS;
  let walk: Walk | null = null;
  /** The walks begun: the current one's number while it lasts. */
  let walks = 0;
  /** Runs handled, by the number of the walk that handled them: a walk's overlap with the one before returns them again. */
  const handled = new Map<string, number>();

  return async function sweep(): Promise<number> {
    let settled = 0;
    if (!walk) {
      walk = { from: walkFrom, before: null, startedAt: Date.now() };
      walks++;
      // In the order they were handled: what the walk before last handled is past this walk's window.
      for (const [taskId, n] of handled) {
        if (n >= walks - 1) break;
        handled.delete(taskId);
      }
    }
    for (let pages = 0; pages < SWEEP_PAGES; pages++) {
      let page;
      try {
        page = await tasks.stoppedBetween(new Date(walk.from), walk.before === null ? null : new Date(walk.before), SWEEP_PAGE_SIZE);
      } catch {
        return settled; // Temporal unreachable: the next sweep asks for the same page.
      }
      const ids: string[] = [];
      for (const id of page.ids) {
        if (!handled.has(id)) ids.push(id);
        // Seen again in this walk's overlap: kept as this walk's, at the end of the order.
        else if (handled.delete(id)) handled.set(id, walks);
      }
      // Before the refunds: a read from now on asks Temporal, which knows the run was stopped.
      await views.forget(ids);
      for (const taskId of ids) {
        // A refund that fails (the store) rejects: the next sweep asks for the same page.
        if ((await billing.refundTask(taskId, STOPPED_REASON, 'refund', 'stopped')) === 'moved') {
          settled++;
          logger.info({ taskId }, 'billing reconciler refunded a stopped task');
        }
        handled.set(taskId, walks);
      }
      if (!page.more || !page.oldestClose) {
        walkFrom = walk.startedAt - WALK_OVERLAP_MS;
        walk = null;
        break;
      }
      // Closes are read to the millisecond: the next page repeats the oldest's millisecond (those
      // handled are skipped), unless a whole page fell in it, when it moves past that millisecond.
      const oldest = page.oldestClose.getTime();
      walk.before = walk.before === null || oldest + 1 < walk.before ? oldest + 1 : oldest;
    }
    return settled;
  };
}
