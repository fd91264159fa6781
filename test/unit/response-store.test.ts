/**
 * The Responses API's records on both stores: a key reads only its own, updates change only
 * what they name, a deleted response reads as absent, and of racing deletes exactly one wins.
 */
import { KeyStore } from '../../src/store/keys';
import { migrate } from '../../src/store/migrations';
import { newResponseId, ResponseStore } from '../../src/store/responses';
import { BOTH_STORES, type OpenedStore } from '../support/stores';

describe.each(BOTH_STORES)('%s', (_name, open) => {
  let opened: OpenedStore;
  let owner: string;
  let other: string;
  beforeAll(async () => {
    opened = await open();
    await migrate(opened.db);
    const keys = new KeyStore(opened.db);
    owner = (await keys.issue('owner')).id;
    other = (await keys.issue('other')).id;
  }, 60_000);
  afterAll(async () => opened?.cleanup());

  test('ids look like OpenAI ones and do not repeat', () => {
    const ids = new Set(Array.from({ length: 100 }, newResponseId));
    expect(ids.size).toBe(100);
    for (const id of ids) expect(id).toMatch(/^resp_[0-9a-f]{48}$/);
  });

  test('a key reads its own response, with the object as stored; another key reads nothing', async () => {
    const store = new ResponseStore(opened.db);
    const id = newResponseId();
    const response = { id, object: 'response', status: 'completed', output: [{ type: 'message', content: [{ type: 'output_text', text: 'héllo "x"' }] }] };
    await store.insert({ id, keyId: owner, model: 'o3-pro', channel: 'sim', upstreamId: 'resp_up', background: false, status: 'completed', response });
    const got = await store.get(id, owner);
    expect(got).toMatchObject({ id, keyId: owner, model: 'o3-pro', channel: 'sim', upstreamId: 'resp_up', background: false, status: 'completed', response });
    expect(got?.createdAt).toBeGreaterThan(1_700_000_000);
    expect(await store.get(id, other)).toBeNull();
    expect(await store.get('resp_missing', owner)).toBeNull();
  });

  test('update changes only what it names', async () => {
    const store = new ResponseStore(opened.db);
    const id = newResponseId();
    await store.insert({ id, keyId: owner, model: 'o3-pro', channel: 'a', upstreamId: null, background: true, status: 'queued', response: null });
    expect(await store.update(id, { upstreamId: 'resp_u', status: 'in_progress' })).toBe(true);
    expect(await store.get(id, owner)).toMatchObject({ channel: 'a', upstreamId: 'resp_u', status: 'in_progress', response: null });
    expect(await store.update(id, { status: 'completed', response: { id, status: 'completed' } })).toBe(true);
    expect(await store.get(id, owner)).toMatchObject({ upstreamId: 'resp_u', status: 'completed', response: { id, status: 'completed' } });
    expect(await store.update('resp_missing', { status: 'failed' })).toBe(false);
  });

  test('of racing deletes exactly one marks it; a deleted response reads as absent and is not updated', async () => {
    const store = new ResponseStore(opened.db);
    const id = newResponseId();
    await store.insert({ id, keyId: owner, model: 'o3-pro', channel: 'a', upstreamId: 'u', background: false, status: 'completed', response: {} });
    expect(await store.markDeleted(id, other)).toBe(false);
    const marks = await Promise.all(Array.from({ length: 5 }, () => new ResponseStore(opened.db).markDeleted(id, owner)));
    expect(marks.filter(Boolean)).toHaveLength(1);
    expect(await store.get(id, owner)).toBeNull();
    expect(await store.update(id, { status: 'failed' })).toBe(false);
  });
});
