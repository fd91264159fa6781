/**
 * The heartbeats of a step that watches something long (an upstream video job, a background
 * response). Each is a write on the Temporal server, so such a step sends one when what it
 * carries changed, and otherwise only to say its worker is alive: once per half heartbeat timeout
 * (or per `fallbackMs` for a step scheduled with none), never once per poll.
 */
import type { Context } from '@temporalio/activity';

export class HeartbeatPacer<T> {
  // Nothing is sent at the start: the server times the first heartbeat from the step's start,
  // and a resumed attempt's last details stay on the server until this one sends its own.
  private sentAt = Date.now();
  private readonly staleAfterMs: number;

  constructor(
    private readonly ctx: Context,
    fallbackMs: number,
  ) {
    this.staleAfterMs = ctx.info.heartbeatTimeoutMs ? ctx.info.heartbeatTimeoutMs / 2 : fallbackMs;
  }

  send(details: T): void {
    this.sentAt = Date.now();
    this.ctx.heartbeat(details);
  }

  /** Whether half the heartbeat timeout passed since the last one sent: time to say it is alive. */
  isStale(): boolean {
    return this.msSinceSent() >= this.staleAfterMs;
  }

  msSinceSent(): number {
    return Date.now() - this.sentAt;
  }
}
