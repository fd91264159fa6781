/**
 * Characters are workflows too: made by characterWorkflow (id = character id), read back
 * from the closed workflow's result (its close event only, no replay). A finished character
 * never changes, so it is kept twice: in this process's cache, and as a view in the store that
 * every replica shares (character-views.ts), which also knows, from the charges, which ids are
 * no character of a key. Only a charged character with no view asks Temporal. Ownership is the
 * memo's owner, and the charge's key.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError, WorkflowIdReusePolicy, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { SA_MODEL, SA_OWNER, SA_STATUS } from '../temporal/search-attributes';
import { characterWorkflow, type CharacterInput } from '../workflows/character';
import { FAILURE_TYPES } from '../workflows/video-task-types';
import { metrics } from '../metrics/metrics';
import type { CharacterState } from './task';
import type { CharacterViews } from './character-views';
import { StillRunning, TaskChargeRefunded, TaskInputRejected, TaskServiceUnavailable, UpstreamFailed } from './task-errors';
import { startFailure } from './task-service';

const CACHE_MAX = 20_000;

export class CharacterService {
  private readonly cache = new Map<string, CharacterState>();

  constructor(
    private readonly client: Client,
    private readonly views: CharacterViews,
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
    if (cached) {
      metrics.characterReads.inc({ source: 'cache' });
      return cached.ownerId === ownerId ? cached : null;
    }
    let look;
    try {
      look = await this.views.look(id, ownerId);
    } catch {
      look = { found: 'ask' } as const; // The store failed this read: Temporal can still answer it.
    }
    if (look.found === 'none') {
      metrics.characterReads.inc({ source: 'none' });
      return null;
    }
    if (look.found === 'view') {
      metrics.characterReads.inc({ source: 'view' });
      this.rememberOnly(look.character);
      return look.character;
    }
    return this.fromTemporal(id, ownerId);
  }

  /**
   * A key's library, newest first: its characters' views, and for those with none yet the
   * answer of get (Temporal). Characters still being made, or not made, are left out.
   */
  async library(ownerId: string, limit: number): Promise<CharacterState[]> {
    const entries = await this.views.library(ownerId, limit);
    const found = await Promise.all(
      entries.map(async ({ id, character }) => {
        if (!character) return this.get(id, ownerId);
        metrics.characterReads.inc({ source: 'view' });
        return character;
      }),
    );
    return found.filter((c): c is CharacterState => c !== null);
  }

  /** A charged character with no view: finished (its view is written now), or not (null). */
  private async fromTemporal(id: string, ownerId: string): Promise<CharacterState | null> {
    metrics.characterReads.inc({ source: 'temporal' });
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

  /** Caches a finished character and writes its view (not awaited: a lost write leaves the next cold read to Temporal). */
  private remember(character: CharacterState): void {
    this.rememberOnly(character);
    this.views.save(character).then(
      () => metrics.characterViewWrites.inc({ outcome: 'ok' }),
      () => metrics.characterViewWrites.inc({ outcome: 'failed' }),
    );
  }

  private rememberOnly(character: CharacterState): void {
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
