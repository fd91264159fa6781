/**
 * What can go wrong when a task or character is created or read, in the domain's terms. The
 * API maps each to a status and to each protocol's error shape (api/domain-errors.ts); nothing
 * here knows HTTP.
 */

/** Temporal did not answer, or refused to: the task service cannot serve the call now. */
export class TaskServiceUnavailable extends Error {
  constructor(
    message: string,
    /** A start Temporal never answered: whether its workflow exists is unknown. */
    readonly unanswered = false,
  ) {
    super(message);
  }
}

/** The caller's input cannot make the task (a character clip that is not a video, ...). */
export class TaskInputRejected extends Error {
  constructor(
    message: string,
    readonly param: string,
    readonly code: string,
  ) {
    super(message);
  }
}

/** The work was refused because its charge was refunded before it could start. */
export class TaskChargeRefunded extends Error {}

/** The provider could not do the work. */
export class UpstreamFailed extends Error {}

/** The work goes on after the caller's wait ended; it can be read later. */
export class StillRunning extends Error {}

/** The key's balance does not cover the task's price. */
export class TaskNotAffordable extends Error {}

/** The key has its maximum of tasks in flight; one may be created after `retryAfterSeconds`. */
export class TooManyTasks extends Error {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

/** The gateway's store did not answer a read a task's answer depends on (its deletion mark). */
export class TaskStoreUnavailable extends Error {}
