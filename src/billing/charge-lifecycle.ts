/**
 * The money of a paid task, start here. Every movement of a balance is in ledger.ts; text
 * requests hold their worst case in text-holds.ts and settle it with usage.ts; prices are in
 * prices.ts; the reconciler (reconciler.ts) settles what a crash left open; the workflow's
 * claim and settlement are charge-activities.ts; audit.ts checks that the ledger and the
 * balances agree.
 *
 * The charge of a paid task (billed_tasks.state) is a state machine. A task runs only while its
 * charge is live: its workflow claims the charge before any work (a refunded charge refuses the
 * task), and a charge refunded while the task ran refuses its completion. Every edge is one
 * conditional update (`where state in (from)`), so racing movers cannot both win.
 *
 *            charge                 claim                 complete
 *   (none) ---------> charged ----------------> started ------------> completed
 *                      |  |                        |
 *                      |  +-- refund-unstarted --+ |  refund
 *                      |                         v v
 *                      +--------- refund -----> refunded
 *
 * Who moves each edge, and when (CHARGE_EDGES holds the same, and the SQL uses it):
 * - charge: the API, before it starts the workflow (PaidTasks; 402/429 refuse it).
 * - claim: the task's workflow, as its first step (claimCharge activity). A charge that is
 *   not `charged` refuses the task, which fails with no work done.
 * - complete: the worker's download step, or the workflow's settle step, when the video is
 *   stored; the reconciler, for a workflow it finds completed. From `charged` too, for workflows
 *   that began before claims existed. A refunded charge refuses the completion: the task fails.
 * - refund: the workflow, when its task fails (settle step); the reconciler, for a run that was
 *   stopped from outside (terminated, timed out, cancelled).
 * - refund-unstarted: the API, when the start was refused for sure (or the request was refused
 *   after a charge ahead); the reconciler, for a charge whose workflow does not exist after the
 *   start window. Only from `charged`: a claimed charge has a workflow.
 */
export type ChargeState = 'charged' | 'started' | 'completed' | 'refunded';
export type ChargeEdge = 'claim' | 'complete' | 'refund' | 'refundUnstarted';

export const CHARGE_EDGES: Record<ChargeEdge, { from: readonly ChargeState[]; to: ChargeState }> = {
  claim: { from: ['charged'], to: 'started' },
  complete: { from: ['charged', 'started'], to: 'completed' },
  refund: { from: ['charged', 'started'], to: 'refunded' },
  refundUnstarted: { from: ['charged'], to: 'refunded' },
};

/** States in which a task holds one of its key's slots (tasks in flight). */
export const LIVE_CHARGE_STATES: readonly ChargeState[] = ['charged', 'started'];

/**
 * The kinds of paid task that hold a slot while live, counted against the key's
 * max_concurrent_tasks: the durable runs (videos, background responses). A character's create
 * answers its outcome, so it holds none. As SQL, for the ledger's statements.
 */
export const SLOT_KINDS_SQL = "('video', 'response')";

/** What an edge found: it moved the charge, or the state it found instead (or no charge at all). */
export type EdgeOutcome = 'moved' | ChargeState | 'missing';
