/**
 * The character workflow with scripted activities: made and charged, or refunded when the
 * provider refuses the clip. Histories are replay fixtures (RECORD_HISTORIES=1).
 */
import { WorkflowFailedError } from '@temporalio/client';
import { characterWorkflow, type CharacterInput } from '../../src/workflows/character';
import { fakeActivities, PLAN, recordHistories, rejected, environmentPerFile, withWorker, type Activities } from './harness';

const environment = environmentPerFile();

function characterInput(username: string): CharacterInput {
  return {
    characterId: `char_${username}`,
    username,
    ownerId: 'key_workflow_test',
    source: { kind: 'url', url: 'https://clips.example/cat.mp4', timestamps: '1,3' },
    model: 'motion',
    createdAt: Date.now(),
  };
}

async function runCharacter(shape: string, input: CharacterInput, overrides: Partial<Activities> = {}) {
  const { activities, calls } = fakeActivities(overrides);
  const outcome = await withWorker(environment(), activities, async (taskQueue) => {
    const handle = await environment().client.workflow.start(characterWorkflow, { taskQueue, workflowId: input.characterId, args: [input] });
    const result = await handle.result().then(
      (state) => ({ state, error: null }),
      (error: unknown) => ({ state: null, error }),
    );
    return { ...result, runId: handle.firstExecutionRunId };
  });
  await recordHistories(environment(), shape, input.characterId, outcome.runId);
  return { ...outcome, calls };
}

const unique = (name: string) => `${name}${Date.now().toString(36)}`;

test('a character is claimed, made upstream, pictured and settled as completed', async () => {
  const input = characterInput(unique('cat'));
  const { state, calls } = await runCharacter('character-completed', input);
  expect(state).toMatchObject({ id: input.characterId, username: input.username, channel: PLAN.channel, upstreamId: `up_char_${input.characterId}` });
  expect(calls.names.slice(0, 2)).toEqual(['claimCharge', 'planChannel']);
  expect(calls.settled).toEqual([{ taskId: input.characterId, outcome: 'completed' }]);
});

test('a character the provider refuses fails the workflow and refunds its charge', async () => {
  const input = characterInput(unique('dog'));
  const { error, calls } = await runCharacter('character-failed', input, {
    async createCharacter() {
      throw rejected('the clip shows no character');
    },
  });
  expect(error).toBeInstanceOf(WorkflowFailedError);
  expect(calls.settled).toEqual([
    { taskId: input.characterId, outcome: 'failed', reason: expect.stringContaining('Activity task failed'), code: 'character_failed' },
  ]);
  expect(calls.names).not.toContain('storeProfilePicture');
});
