/**
 * Character views on both stores: what the store answers for an id from the charges and the
 * views alone (a character of this key, none, or a question for Temporal), a key's library
 * newest first, writes that repeat, and the prune past the retention.
 */
import { BillingStore } from '../../src/billing/ledger';
import { CharacterViews } from '../../src/tasks/character-views';
import type { CharacterState } from '../../src/tasks/task';
import { KeyStore } from '../../src/store/keys';
import { migrate } from '../../src/store/migrations';
import { BOTH_STORES, type OpenedStore } from '../support/stores';

describe.each(BOTH_STORES)('%s', (_name, open) => {
  let opened: OpenedStore;
  let views: CharacterViews;
  let billing: BillingStore;
  let keyId: string;
  let otherKeyId: string;
  let n = 0;

  beforeAll(async () => {
    opened = await open();
    await migrate(opened.db);
    views = new CharacterViews(opened.db, 30);
    billing = new BillingStore(opened.db);
    const keys = new KeyStore(opened.db);
    keyId = (await keys.issue('characters')).id;
    otherKeyId = (await keys.issue('another')).id;
  }, 60_000);
  afterAll(async () => opened?.cleanup());

  /** A character of its own per test, charged to `owner` as a create charges it. */
  async function charged(owner = keyId): Promise<CharacterState> {
    const username = `viewed${++n}`;
    const id = `char_${username}`;
    expect(await billing.chargeTask({ keyId: owner, taskId: id, kind: 'character', model: 'character', amount: 0 })).toBe('charged');
    return {
      id,
      username,
      ownerId: owner,
      channel: 'sim',
      upstreamId: `up_${n}`,
      profileKey: `characters/${id}.png`,
      createdAt: Math.floor(Date.now() / 1000),
    };
  }

  test('an id never charged is no character, and asks nothing more', async () => {
    expect(await views.look('char_neverseen', keyId)).toEqual({ found: 'none' });
  });

  test('a charged character with no view is a question for Temporal; once its view is written it is the answer', async () => {
    const character = await charged();
    expect(await views.look(character.id, keyId)).toEqual({ found: 'ask' });
    await billing.claimTask(character.id);
    expect(await views.look(character.id, keyId)).toEqual({ found: 'ask' });
    await billing.completeTask(character.id);
    await views.save(character);
    expect(await views.look(character.id, keyId)).toEqual({ found: 'view', character });
    // A second write (another replica's read) changes nothing.
    await views.save({ ...character, upstreamId: 'someone else' });
    expect(await views.look(character.id, keyId)).toEqual({ found: 'view', character });
  });

  test("another key's character is none, its view or not; a refunded charge (not made) is none", async () => {
    const theirs = await charged(otherKeyId);
    expect(await views.look(theirs.id, keyId)).toEqual({ found: 'none' });
    await views.save(theirs);
    expect(await views.look(theirs.id, keyId)).toEqual({ found: 'none' });
    expect(await views.look(theirs.id, otherKeyId)).toEqual({ found: 'view', character: theirs });

    const failed = await charged();
    await billing.refundTask(failed.id, 'the provider could not make it');
    expect(await views.look(failed.id, keyId)).toEqual({ found: 'none' });
  });

  test('the library: the key’s characters newest first, with their views or null, none refunded and none of another key', async () => {
    const first = await charged();
    const second = await charged();
    const refunded = await charged();
    const third = await charged();
    await charged(otherKeyId);
    await billing.refundTask(refunded.id, 'not made');
    await views.save(first);
    await views.save(third);
    const entries = await views.library(keyId, 3);
    expect(entries).toEqual([
      { id: third.id, character: third },
      { id: second.id, character: null },
      { id: first.id, character: first },
    ]);
  });

  test('past the retention and a day: a view is pruned, and a charge without one is none, not a question', async () => {
    const old = await charged();
    const recent = await charged();
    await views.save({ ...old, createdAt: Math.floor(Date.now() / 1000) - 32 * 86_400 });
    await views.save(recent);
    await opened.db.query("update billed_tasks set created_at = now() - interval '32 days' where task_id = $1", [old.id]);
    expect(await views.prune()).toBeGreaterThanOrEqual(1);
    expect(await views.look(old.id, keyId)).toEqual({ found: 'none' });
    expect(await views.look(recent.id, keyId)).toEqual({ found: 'view', character: recent });
    expect((await views.library(keyId, 100)).map((e) => e.id)).not.toContain(old.id);
  });
});
