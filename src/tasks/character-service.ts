/**
 * Characters are workflows too: made by characterWorkflow (id = character id), read back
 * from the closed workflow's result (its close event only, no replay) and cached, since a
 * finished character never changes. Ownership is the memo's owner.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError, WorkflowIdReusePolicy, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { SA_MODEL, SA_OWNER, SA_STATUS } from '../temporal/search-attributes';
import { characterWorkflow, type CharacterInput } from '../workflows/character';
import { FAILURE_TYPES } from '../workflows/video-task-types';
import type { CharacterState } from './task';
import { StillRunning, TaskChargeRefunded, TaskInputRejected, TaskServiceUnavailable, UpstreamFailed } from './task-errors';
import { startFailure } from './task-service';

const CACHE_MAX = 20_000;

export class CharacterService {
  private readonly cache = new Map<string, CharacterState>();

  constructor(
    private readonly client: Client,
    private readonly opts: { taskQueue: string; rpcTimeoutMs: number; createTimeoutMs: number },
  ) {}

  /** Makes the character and waits for it (the clip fetch and the provider call take seconds). */
  async create(input: CharacterInput): Promise<CharacterState> {
    const connection = this.client.connection;
    let handle;
    try {
      handle = await connection.withDeadline(Date.now() + this.opts.rpcTimeoutMs, () =>
        this.client.workflow.start(characterWorkflow, {
          taskQueue: this.opts.taskQueue,
          workflowId: input.characterId,
          args: [input],
          memo: { ownerId: input.ownerId },
          typedSearchAttributes: [
            { key: SA_MODEL, value: 'character' },
            { key: SA_OWNER, value: input.ownerId },
            { key: SA_STATUS, value: 'processing' },
          ],
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        }),
      );
    } catch (err) {
      // Started before, by a create this one repeats (Idempotency-Key): wait for that one.
      if (err instanceof WorkflowExecutionAlreadyStartedError) handle = this.client.workflow.getHandle(input.characterId);
      else throw startFailure(err, unavailableMessage(err));
    }
    try {
      const character = await connection.withDeadline(Date.now() + this.opts.createTimeoutMs, () => handle.result() as Promise<CharacterState>);
      this.remember(character);
      return character;
    } catch (err) {
      throw characterError(err, input.characterId);
    }
  }

  /** The character, or null when it does not exist, is not finished, or belongs to another key. */
  async get(id: string, ownerId: string): Promise<CharacterState | null> {
    const cached = this.cache.get(id);
    if (cached) return cached.ownerId === ownerId ? cached : null;
    const handle = this.client.workflow.getHandle(id);
    try {
      const description = await this.client.connection.withDeadline(Date.now() + this.opts.rpcTimeoutMs, () => handle.describe());
      if (description.memo?.ownerId !== ownerId || description.status.name !== 'COMPLETED') return null;
      const character = await this.client.connection.withDeadline(Date.now() + this.opts.rpcTimeoutMs, () => handle.result() as Promise<CharacterState>);
      this.remember(character);
      return character;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return null;
      throw new TaskServiceUnavailable(unavailableMessage(err));
    }
  }

  private remember(character: CharacterState): void {
    if (this.cache.size >= CACHE_MAX) this.cache.delete(this.cache.keys().next().value ?? '');
    this.cache.set(character.id, character);
  }
}

/** Why a character could not be made, as the client should hear it. */
function characterError(err: unknown, id: string): Error {
  if (err instanceof WorkflowFailedError) {
    let cause: unknown = err.cause;
    while (cause instanceof Error && !(cause instanceof ApplicationFailure) && cause.cause) cause = cause.cause;
    if (cause instanceof ApplicationFailure && cause.type === FAILURE_TYPES.inputRejected) {
      return new TaskInputRejected(`The character could not be made: ${cause.message}`, 'url', 'invalid_character_source');
    }
    if (cause instanceof ApplicationFailure && cause.type === FAILURE_TYPES.chargeNotLive) {
      return new TaskChargeRefunded('The character was not made: its charge was refunded before it could start. Create it again.');
    }
    const message = cause instanceof Error ? cause.message : 'the provider could not make it';
    return new UpstreamFailed(`The provider could not make the character: ${message}`);
  }
  return new StillRunning(`The character ${id} is still being made; read it later with GET /motion/v1/characters/${id}.`);
}

function unavailableMessage(err: unknown): string {
  return `The task service is unavailable (${(err as Error).message.split('\n')[0]}). Retry in a few seconds.`;
}
