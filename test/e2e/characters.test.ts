/**
 * Characters (spec 2.3, 4.8): made by a durable workflow from a clip URL or a finished task,
 * owned by the key that made them, cast in later motion prompts as @username.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { SAMPLE_MP4, THUMBNAIL_PNG } from '../../simulator/assets';
import { call, createTask, waitForTerminal } from '../support/client';
import { waitFor } from '../support/ports';
import { scrape, sumOf } from '../support/prometheus';
import { e2eEnv, startGateway, type Gateway } from '../support/stack';
import { upstreamJobOf } from '../support/upstream';

let gw: Gateway;
let key: string;
let clipServer: http.Server;
let clipBase: string;
let temporal: Client;

interface CharacterView {
  id: string;
  username: string;
  permalink: string;
  profile_picture_url: string;
}

const METRICS_TOKEN = 'characters-metrics-token';

beforeAll(async () => {
  gw = await startGateway({ env: { METRICS_TOKEN } });
  key = await gw.issueKey('characters');
  clipServer = http.createServer((req, res) => {
    const png = req.url === '/still.png';
    res.writeHead(200, { 'content-type': png ? 'image/png' : 'video/mp4' });
    res.end(png ? THUMBNAIL_PNG : SAMPLE_MP4);
  });
  await new Promise<void>((r) => clipServer.listen(0, '127.0.0.1', r));
  clipBase = `http://127.0.0.1:${(clipServer.address() as AddressInfo).port}`;
  temporal = new Client({ connection: await Connection.connect({ address: e2eEnv().temporalAddress }) });
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  clipServer?.close();
  await temporal?.connection.close();
}, 120_000);

const createCharacter = (json: unknown, k = key) =>
  call<CharacterView & { error?: { code: string; param: string } }>(`${gw.url}/motion/v1/characters`, { key: k, json });

async function upstreamCharacterId(characterId: string): Promise<string> {
  return ((await temporal.workflow.getHandle(characterId).result()) as { upstreamId: string }).upstreamId;
}

/** How many character reads each source answered in the API at `base` so far. */
async function characterReads(base: string): Promise<Record<'cache' | 'view' | 'none' | 'temporal', number>> {
  const samples = await scrape(`${base}/metrics`, METRICS_TOKEN);
  const of = (source: string) => sumOf(samples, 'gateway_character_reads_total', { source });
  return { cache: of('cache'), view: of('view'), none: of('none'), temporal: of('temporal') };
}

async function upstreamParams(taskId: string): Promise<Record<string, unknown>> {
  return (await upstreamJobOf(temporal, gw.simulatorUrl, taskId)).params;
}

test('a character from a finished task, used as @username in a later prompt', async () => {
  const source = await createTask(gw.url, key, { model: 'motion-2', prompt: 'a red panda waves [sim:ms=200]', images: [] });
  await waitForTerminal(gw.url, key, source.id);

  const made = await createCharacter({ from_task: source.id, timestamps: '0,1.5' });
  expect(made.status).toBe(200);
  expect(Object.keys(made.body).sort()).toEqual(['id', 'permalink', 'profile_picture_url', 'username']);
  expect(made.body.id).toBe(`char_${made.body.username}`);
  expect(made.body.username).toMatch(/^[a-z0-9]{10}$/);
  const picture = await fetch(made.body.profile_picture_url);
  expect(picture.headers.get('content-type')).toBe('image/png');
  expect(
    Buffer.from(await picture.arrayBuffer())
      .subarray(1, 4)
      .toString('ascii'),
  ).toBe('PNG');
  const permalink = await call<CharacterView>(made.body.permalink, { key });
  expect(permalink.status).toBe(200);
  expect(permalink.body.username).toBe(made.body.username);

  const cast = await createTask(gw.url, key, { model: 'motion-2', prompt: `@${made.body.username} dances in the rain [sim:ms=200]`, images: [] });
  const { final } = await waitForTerminal(gw.url, key, cast.id);
  expect(final.status).toBe('completed');
  expect((await upstreamParams(cast.id)).characters).toEqual([await upstreamCharacterId(made.body.id)]);
});

test('a character from a clip URL; it belongs to the key that made it', async () => {
  const made = await createCharacter({ url: `${clipBase}/clip.mp4`, timestamps: '0,2' });
  expect(made.status).toBe(200);
  const stranger = await gw.issueKey('stranger');
  expect((await call(made.body.permalink, { key: stranger })).status).toBe(404);
  const foreign = await call<{ error: { code: string; param: string } }>(`${gw.url}/v1/video/create`, {
    key: stranger,
    json: { model: 'motion-2', prompt: `@${made.body.username} is not yours`, images: [] },
  });
  expect(foreign.status).toBe(400);
  expect(foreign.body.error.code).toBe('unknown_character');

  // Through the multipart family too.
  const form = new FormData();
  for (const [k, v] of Object.entries({ model: 'motion-2-pro', prompt: `@${made.body.username} on a beach [sim:ms=200]`, seconds: '10', size: '1280x720' }))
    form.set(k, v);
  const res = await fetch(`${gw.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  expect(res.status).toBe(200);
  const { id } = (await res.json()) as { id: string };
  expect((await waitForTerminal(gw.url, key, id)).final.status).toBe('completed');
  expect((await upstreamParams(id)).characters).toEqual([await upstreamCharacterId(made.body.id)]);
});

test('character_from_task on /v1/videos makes a character inside the task and casts it', async () => {
  const source = await createTask(gw.url, key, { model: 'motion-2', prompt: 'a robot bows [sim:ms=200]', images: [] });
  await waitForTerminal(gw.url, key, source.id);
  const form = new FormData();
  for (const [k, v] of Object.entries({
    model: 'motion-2',
    prompt: 'the robot again [sim:ms=200]',
    seconds: '4',
    size: '480x480',
    character_from_task: source.id,
    character_timestamps: '0,1',
  }))
    form.set(k, v);
  const res = await fetch(`${gw.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  expect(res.status).toBe(200);
  const { id } = (await res.json()) as { id: string };
  expect((await waitForTerminal(gw.url, key, id)).final.status).toBe('completed');
  expect((await upstreamParams(id)).characters).toEqual([expect.stringMatching(/^char_/)]);
});

test('bad input: unknown @username, both or neither source, bad span, unknown or unfinished task, a clip that is no video', async () => {
  const unknown = await call<{ error: { code: string; param: string } }>(`${gw.url}/v1/video/create`, {
    key,
    json: { model: 'motion-2', prompt: 'with @nobody_here in it', images: [] },
  });
  expect(unknown.status).toBe(400);
  expect(unknown.body.error).toMatchObject({ code: 'unknown_character', param: 'prompt' });
  // An e-mail address is no mention.
  expect((await call(`${gw.url}/v1/video/create`, { key, json: { model: 'motion-2', prompt: 'mail me at a@b.com [sim:ms=100]', images: [] } })).status).toBe(
    200,
  );

  expect((await createCharacter({ url: `${clipBase}/clip.mp4`, from_task: 'motion-2:1795335070122-abcdefghij' })).status).toBe(400);
  expect((await createCharacter({})).status).toBe(400);
  const span = await createCharacter({ url: `${clipBase}/clip.mp4`, timestamps: '0,5' });
  expect(span.status).toBe(400);
  expect(span.body.error?.param).toBe('timestamps');
  expect((await createCharacter({ from_task: 'motion-2:1795335070122-abcdefghij' })).status).toBe(404);
  const running = await createTask(gw.url, key, { model: 'motion-2', prompt: 'not yet [sim:ms=5000]', images: [] });
  expect((await createCharacter({ from_task: running.id })).status).toBe(409);
  const notVideo = await createCharacter({ url: `${clipBase}/still.png` });
  expect(notVideo.status).toBe(400);
  expect(notVideo.body.error?.code).toBe('invalid_character_source');
  expect((await call(`${gw.url}/motion/v1/characters/char_doesnotexist`, { key })).status).toBe(404);
  expect((await call(`${gw.url}/motion/v1/characters`, { json: { url: `${clipBase}/clip.mp4` } })).status).toBe(401);
});

test('character_create: save_to_library makes a reusable character (named in the answer); create_self_portrait reaches the provider', async () => {
  const form = new FormData();
  const options = JSON.stringify({ save_to_library: true, create_self_portrait: true });
  for (const [k, v] of Object.entries({
    model: 'motion-2',
    prompt: 'me, surfing [sim:ms=200]',
    seconds: '4',
    size: '480x480',
    character_url: `${clipBase}/clip.mp4`,
    character_timestamps: '0,1',
    character_create: options,
  }))
    form.set(k, v);
  const res = await fetch(`${gw.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { id: string; character: { id: string; username: string } };
  expect(body.character.id).toBe(`char_${body.character.username}`);
  expect((await waitForTerminal(gw.url, key, body.id)).final.status).toBe('completed');
  const upstreamId = await upstreamCharacterId(body.character.id);
  expect((await upstreamParams(body.id)).characters).toEqual([upstreamId]);
  const atProvider = await call<{ self_portrait?: boolean }>(`${gw.simulatorUrl}/v1/videos/characters/${upstreamId}`, { key: 'sim-key' });
  expect(atProvider.body.self_portrait).toBe(true);

  const later = await createTask(gw.url, key, { model: 'motion-2', prompt: `@${body.character.username} again [sim:ms=100]`, images: [] });
  expect((await waitForTerminal(gw.url, key, later.id)).final.status).toBe('completed');
});

test.each([
  ['not JSON', '{save', true],
  ['an unknown option', '{"save_to_library":true,"colour":"red"}', true],
  ['a non-boolean option', '{"save_to_library":"yes"}', true],
  ['no character source', '{"save_to_library":true}', false],
])('character_create %s is a 400', async (_name, value, withSource) => {
  const form = new FormData();
  const fields: Record<string, string> = { model: 'motion-2', prompt: 'x', seconds: '4', size: '480x480', character_create: value };
  if (withSource) fields.character_url = `${clipBase}/clip.mp4`;
  for (const [k, v] of Object.entries(fields)) form.set(k, v);
  const res = await fetch(`${gw.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  expect(res.status).toBe(400);
  expect(((await res.json()) as { error: { param: string } }).error.param).toBe('character_create');
});

test('another replica reads a character, its library, its @mention, and ids that are no character of the key from the store: no Temporal call; a character whose view is lost asks Temporal once and has it written again', async () => {
  const made = await createCharacter({ url: `${clipBase}/clip.mp4`, timestamps: '0,2' });
  expect(made.status).toBe(200);
  const stranger = await gw.issueKey('stranger to the library');
  // A replica started now has nothing cached: what it knows of the character is in the store.
  const replica = await gw.startApiReplica();
  try {
    const before = await characterReads(replica);
    const read = await call<CharacterView>(`${replica}/motion/v1/characters/${made.body.id}`, { key });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: made.body.id, username: made.body.username });
    const list = await call<{ data: CharacterView[] }>(`${replica}/motion/v1/characters?limit=100`, { key });
    expect(list.body.data.map((c) => c.id)).toContain(made.body.id);
    const cast = await call<{ id: string }>(`${replica}/v1/video/create`, {
      key,
      json: { model: 'motion-2', prompt: `@${made.body.username} waves [sim:ms=200]`, images: [] },
    });
    expect(cast.status).toBe(200);
    expect((await call(`${replica}/motion/v1/characters/${made.body.id}`, { key: stranger })).status).toBe(404);
    expect((await call(`${replica}/motion/v1/characters/char_nobodyhere`, { key })).status).toBe(404);
    const unknown = await call<{ error: { code: string } }>(`${replica}/v1/video/create`, {
      key,
      json: { model: 'motion-2', prompt: '@nobodyhere waves', images: [] },
    });
    expect(unknown.body.error.code).toBe('unknown_character');
    const after = await characterReads(replica);
    expect(after.temporal - before.temporal).toBe(0);
    // The two ids no character has; the stranger's read found the character cached by the first.
    expect(after.none - before.none).toBe(2);
    expect(after.view + after.cache - before.view - before.cache).toBeGreaterThanOrEqual(4);
    await waitForTerminal(gw.url, key, cast.body.id);
  } finally {
    await gw.killApiReplica(replica);
  }

  // Its view lost (or a character made before views): one describe, and the view is written again.
  const db = new pg.Client({ connectionString: gw.databaseUrl });
  await db.connect();
  try {
    await db.query('delete from character_views where character_id = $1', [made.body.id]);
    const cold = await gw.startApiReplica();
    try {
      const before = await characterReads(cold);
      expect((await call<CharacterView>(`${cold}/motion/v1/characters/${made.body.id}`, { key })).body).toMatchObject({
        id: made.body.id,
        username: made.body.username,
      });
      expect((await characterReads(cold)).temporal - before.temporal).toBe(1);
      await waitFor(
        'the view written again',
        async () => (await db.query('select 1 from character_views where character_id = $1', [made.body.id])).rowCount === 1,
        10_000,
        50,
      );
    } finally {
      await gw.killApiReplica(cold);
    }
  } finally {
    await db.end();
  }
}, 120_000);
