/**
 * One character = one workflow, whose id is the character id (`char_<username>`), so
 * `@username` resolves with a single describe and the owner is in its memo.
 * plan channel -> create the character upstream (clip from a URL or a finished task) ->
 * store its profile picture -> the character.
 */
import { patched, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { SA_STATUS } from '../temporal/search-attributes';
import type { CharacterSource, CharacterState } from '../tasks/task';
import { CHARGE_CLAIM_PATCH, claimCharge, planChannel, settleTask, upstreamActivities } from './video-task';

export interface CharacterInput {
  characterId: string;
  username: string;
  ownerId: string;
  source: CharacterSource;
  /** The motion model whose channel makes the character (the characters it casts must live there). */
  model: string;
  createdAt: number;
}

export async function characterWorkflow(input: CharacterInput): Promise<CharacterState> {
  const characterId = workflowInfo().workflowId;
  let made;
  try {
    // Refused when its charge was refunded before the workflow ran (billing/charge-lifecycle.ts).
    if (patched(CHARGE_CLAIM_PATCH)) await claimCharge({ taskId: characterId });
    const plan = await planChannel({ model: input.model });
    const { createCharacter, storeProfilePicture } = upstreamActivities(plan);
    const upstream = await createCharacter({ taskId: characterId, ownerId: input.ownerId, channel: plan.channel, source: input.source, name: input.username });
    const profileKey = await storeProfilePicture({ characterId: input.characterId, channel: plan.channel, upstreamId: upstream.id });
    made = { plan, upstream, profileKey };
  } catch (err) {
    // The character could not be made: its charge is refunded before the workflow fails.
    await settleTask({
      taskId: characterId,
      outcome: 'failed',
      reason: err instanceof Error ? err.message : 'the character could not be made',
      code: 'character_failed',
    });
    throw err;
  }
  const { plan, upstream, profileKey } = made;
  await settleTask({ taskId: characterId, outcome: 'completed' });
  upsertSearchAttributes([{ key: SA_STATUS, value: 'completed' }]);
  return {
    id: input.characterId,
    username: input.username,
    ownerId: input.ownerId,
    channel: plan.channel,
    upstreamId: upstream.id,
    profileKey,
    createdAt: Math.floor(input.createdAt / 1000),
  };
}
