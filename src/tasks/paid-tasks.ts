/**
 * Tasks that cost credits: the charge is written before anything is started (so a key whose
 * balance is short gets 402 with nothing made), then the workflow starts, and the workflow
 * settles the charge when it ends (completed: it stands; failed: refunded once).
 *
 * A charge is never left without its task: when the start is refused for sure (the workflow
 * does not exist) the charge is refunded at once; when Temporal cannot say (it is down), the
 * reconciler refunds it once it can see the workflow never started.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { Logger } from 'pino';
import { characterPrice, videoTaskPrice, type PriceTable } from '../billing/prices';
import { TaskNotAffordable, TooManyTasks } from './task-errors';
import type { UsageRecorder } from '../billing/usage';
import { InsufficientBalance, TooManyTasksInFlight, type BillingStore, type TaskCharge } from '../billing/ledger';
import { ChargeQueue } from '../billing/charge-queue';
import type { CharacterInput } from '../workflows/character';
import type { CharacterService } from './character-service';
import type { StartConfirmations } from './start-confirmations';
import { startUnanswered, type TaskService } from './task-service';
import type { CharacterState, TaskRequest, TaskState } from './task';

/** What a video task's price depends on, and whose task it is. */
export type VideoTaskCharge = Pick<TaskRequest, 'taskId' | 'ownerId' | 'model' | 'seconds' | 'size' | 'remixOf'> & { enableUpsample?: boolean };

/** How a refused charge names what it was for. */
const WHAT_IS_CHARGED: Record<TaskCharge['kind'], (model: string) => string> = {
  video: (model) => `This ${model} task costs`,
  character: () => 'This character costs',
  response: (model) => `This ${model} background response may cost up to`,
};

/** Seconds a client told "too many tasks in flight" waits before trying again. */
const TASKS_IN_FLIGHT_RETRY_SECONDS = 10;

export class PaidTasks {
  /** Charges of one key arriving together share one statement (one lock, one commit). */
  private readonly charges: ChargeQueue;

  constructor(
    private readonly tasks: TaskService,
    private readonly characters: CharacterService,
    private readonly billing: BillingStore,
    private readonly prices: PriceTable,
    private readonly starts: StartConfirmations,
    private readonly logger: Logger,
    /** Text settlements on their way to the store, which a refused charge waits for (UsageRecorder.afterSettled). */
    private readonly usage: Pick<UsageRecorder, 'afterSettled'>,
    /**
     * How long a charge taken ahead may wait for its task's start (the character made first,
     * and the start after it): the reconciler does not ask about it before then, so a slow
     * character is not taken for a start that was lost.
     */
    private readonly aheadWindowSeconds = 300,
  ) {
    this.charges = new ChargeQueue(billing);
  }

  /** Charges and starts a video (or remix) task. */
  async start(request: TaskRequest): Promise<TaskState> {
    // A task charged ahead (chargeAhead) is not charged again: the charge is idempotent by task id.
    await this.chargeVideo(request);
    try {
      const state = await this.tasks.start(request);
      this.starts.started(request.taskId);
      return state;
    } catch (err) {
      // Started before, by the create this one repeats (Idempotency-Key): that is the task.
      if (err instanceof WorkflowExecutionAlreadyStartedError) {
        const existing = await this.tasks.get(request.taskId, request.ownerId);
        if (existing) return existing;
      }
      await this.refundIfNeverStarted(request.taskId, err);
      throw err;
    }
  }

  /**
   * Charges a video task before it can be started, for a request that must make something
   * else first (a character saved to the library): a key that cannot pay for the task gets its
   * 402 before anything is made. `start` then finds the charge in place; `release` refunds it
   * when the request is refused before the task starts.
   */
  async chargeAhead(task: VideoTaskCharge): Promise<void> {
    await this.chargeVideo(task, this.aheadWindowSeconds);
  }

  /** The task's charge; the reconciler first asks about its start after `firstCheckAfterSeconds` (default: the start window). */
  private async chargeVideo(task: VideoTaskCharge, firstCheckAfterSeconds?: number): Promise<void> {
    const amount = videoTaskPrice(this.prices, {
      model: task.model,
      seconds: task.seconds,
      size: task.size,
      enableUpsample: task.enableUpsample,
      remix: task.remixOf !== undefined,
    });
    await this.charge({ keyId: task.ownerId, taskId: task.taskId, kind: 'video', model: task.model, amount, firstCheckAfterSeconds });
  }

  /** Refunds a charge taken with chargeAhead for a task that will not be started. */
  async release(taskId: string): Promise<void> {
    await this.billing.refundTask(taskId, 'the request was refused before its task started', 'refundUnstarted', 'refused_before_start');
  }

  /** Charges for a character and makes it (the workflow refunds it if it cannot be made). */
  async createCharacter(input: CharacterInput): Promise<CharacterState> {
    const amount = characterPrice(this.prices);
    await this.charge({ keyId: input.ownerId, taskId: input.characterId, kind: 'character', model: 'character', amount });
    try {
      const state = await this.characters.create(input);
      this.starts.started(input.characterId);
      return state;
    } catch (err) {
      await this.refundIfNeverStarted(input.characterId, err);
      throw err;
    }
  }

  /**
   * Charges a paid run of another kind (a background response's hold) and starts it with
   * `start`; a start refused for sure refunds the charge at once, like a video task's.
   */
  async startCharged(charge: TaskCharge, start: () => Promise<void>): Promise<void> {
    await this.charge(charge);
    try {
      await start();
      this.starts.started(charge.taskId);
    } catch (err) {
      await this.refundIfNeverStarted(charge.taskId, err);
      throw err;
    }
  }

  private async charge(charge: TaskCharge): Promise<void> {
    try {
      // A refusal while this key's text settlements are still on their way (their holds counted,
      // their release not yet) is decided again once they are written.
      await this.usage.afterSettled(
        charge.keyId,
        () => this.charges.charge(charge),
        (err) => err instanceof InsufficientBalance,
      );
    } catch (err) {
      if (err instanceof InsufficientBalance) {
        throw new TaskNotAffordable(
          `${WHAT_IS_CHARGED[charge.kind](charge.model)} ${charge.amount} credits and the key's balance is ${err.balance}. ` +
            'Ask the gateway operator to add quota (POST /admin/keys/{id}/quota).',
        );
      }
      if (err instanceof TooManyTasksInFlight) {
        throw new TooManyTasks(
          `This key already has ${err.limit} tasks (videos and background responses) in flight, its limit. Retry once one of them has finished.`,
          TASKS_IN_FLIGHT_RETRY_SECONDS,
        );
      }
      throw err;
    }
  }

  private async refundIfNeverStarted(taskId: string, startError: unknown): Promise<void> {
    // Already started means the task exists (a repeated id): its charge belongs to it.
    if (startError instanceof WorkflowExecutionAlreadyStartedError) return;
    let outcome: Awaited<ReturnType<TaskService['outcome']>> | 'unknown' = 'unknown';
    // Temporal did not answer the start: asking it again would only make the client wait as long
    // once more for its 503. The reconciler settles the charge once Temporal can say.
    if (!startUnanswered(startError)) {
      try {
        outcome = await this.tasks.outcome(taskId);
      } catch {
        outcome = 'unknown';
      }
    }
    if (outcome === 'missing') {
      // Only a charge never claimed: if the start lands after all, its claim refuses the task.
      await this.billing.refundTask(taskId, 'the task could not be started', 'refundUnstarted', 'start_failed');
      this.logger.info({ taskId }, 'start refused; charge refunded');
    } else if (outcome === 'unknown') {
      this.logger.warn({ taskId }, 'start failed and Temporal cannot say whether the task exists; the billing reconciler settles its charge');
    }
  }
}
