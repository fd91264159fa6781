/**
 * The calls of the official `openai` SDK's videos resource beyond create and retrieve, on the
 * real stack: videos.list() (every family's tasks of the key, newest first, cursor pages, both
 * orders) and videos.downloadContent() (the file's bytes, Range honoured), next to the spec's
 * JSON answer of the content endpoint for clients that do not ask for bytes.
 */
import OpenAI, { toFile } from 'openai';
import { THUMBNAIL_PNG } from '../../simulator/assets';
import { createTask, waitForTerminal } from '../support/client';
import { startGateway, type Gateway } from '../support/stack';

let gw: Gateway;
let key: string;
let openai: OpenAI;
/** The key's tasks, oldest first. */
const ids: string[] = [];

beforeAll(async () => {
  gw = await startGateway();
  key = await gw.issueKey('videos-sdk');
  openai = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  // One of each family: the JSON family, /v1/videos with a vidgen_3_1 model, /v1/videos motion.
  ids.push((await createTask(gw.url, key, { model: 'vidgen3', prompt: 'first [sim:ms=300]', aspect_ratio: '16:9' })).id);
  ids.push(
    (
      await openai.videos.create({
        model: 'vidgen_3_1-fast' as OpenAI.VideoModel,
        prompt: 'second [sim:ms=300]',
        seconds: '6' as OpenAI.VideoSeconds,
        size: '720x1280',
        input_reference: await toFile(THUMBNAIL_PNG, 'ref.png', { type: 'image/png' }),
      })
    ).id,
  );
  ids.push((await openai.videos.create({ model: 'motion-2' as OpenAI.VideoModel, prompt: 'third [sim:fail]', seconds: '8', size: '1280x720' })).id);
  ids.push((await openai.videos.create({ model: 'motion-2' as OpenAI.VideoModel, prompt: 'fourth [sim:ms=300]', seconds: '8', size: '1280x720' })).id);
  for (const id of ids) await waitForTerminal(gw.url, key, id, 60_000);
}, 180_000);

afterAll(async () => {
  await gw?.stop();
}, 120_000);

test('videos.list() pages through every family of the key, newest first', async () => {
  const seen: string[] = [];
  for await (const video of openai.videos.list({ limit: 3 })) seen.push(video.id);
  expect(seen).toEqual([...ids].reverse());

  const first = await openai.videos.list({ limit: 2 });
  expect(first.data.map((v) => v.id)).toEqual([ids[3], ids[2]]);
  expect(first.has_more).toBe(true);
  const failed = first.data[1] as unknown as Record<string, unknown>;
  expect(failed).toMatchObject({ object: 'video', model: 'motion-2', status: 'failed', completed_at: null, video_url: null });
  expect(failed.error).toMatchObject({ code: expect.any(String) });
  const done = first.data[0] as unknown as Record<string, unknown>;
  expect(done).toMatchObject({ id: ids[3], object: 'video', status: 'completed', progress: 100, video_url: expect.stringContaining('/files/') });
  expect(done.completed_at).toEqual(expect.any(Number));

  const second = await first.getNextPage();
  expect(second.data.map((v) => v.id)).toEqual([ids[1], ids[0]]);
  expect(second.has_more).toBe(false);
  expect(second.hasNextPage()).toBe(false);
});

test('videos.list({ order: "asc" }) runs oldest first, and after= continues from a task', async () => {
  const asc = await openai.videos.list({ order: 'asc', limit: 10 });
  expect(asc.data.map((v) => v.id)).toEqual(ids);
  const rest = await openai.videos.list({ order: 'asc', after: ids[1] });
  expect(rest.data.map((v) => v.id)).toEqual(ids.slice(2));
});

test('a key sees only its own videos, and a cursor or limit that is not valid is a 400', async () => {
  const other = new OpenAI({ apiKey: await gw.issueKey('other'), baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const page = await other.videos.list();
  expect(page.data).toEqual([]);
  expect(page.has_more).toBe(false);
  await expect(other.videos.list({ after: ids[0] })).rejects.toMatchObject({ status: 400, param: 'after' });
  await expect(openai.videos.list({ limit: 0 })).rejects.toMatchObject({ status: 400 });
  await expect(openai.videos.list({ limit: 101 })).rejects.toMatchObject({ status: 400 });
  await expect(openai.videos.list({ order: 'sideways' as 'asc' })).rejects.toMatchObject({ status: 400 });
});

test('videos.downloadContent() answers the bytes of the video_url, with Range honoured', async () => {
  const id = ids[3]!;
  const bytes = Buffer.from(await (await openai.videos.downloadContent(id)).arrayBuffer());
  const video = (await openai.videos.retrieve(id)) as unknown as { video_url: string };
  const viaUrl = Buffer.from(await (await fetch(video.video_url)).arrayBuffer());
  expect(bytes.length).toBeGreaterThan(1000);
  expect(bytes.equals(viaUrl)).toBe(true);
  expect(bytes.subarray(4, 8).toString('latin1')).toBe('ftyp');

  const withVariant = await openai.videos.downloadContent(id, { variant: 'video' });
  expect(withVariant.headers.get('content-type')).toBe('video/mp4');

  const part = await fetch(`${gw.url}/v1/videos/${id}/content`, { headers: { authorization: `Bearer ${key}`, accept: 'video/mp4', range: 'bytes=0-99' } });
  expect(part.status).toBe(206);
  expect(part.headers.get('content-range')).toBe(`bytes 0-99/${bytes.length}`);
  expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(0, 100))).toBe(true);

  await expect(openai.videos.downloadContent(id, { variant: 'thumbnail' })).rejects.toMatchObject({ status: 404 });
  // A failed task has no content, in bytes or in JSON.
  await expect(openai.videos.downloadContent(ids[2]!)).rejects.toMatchObject({ status: 409 });
});

test('a client that does not ask for bytes keeps the JSON content answer of the spec', async () => {
  for (const accept of [undefined, '*/*', 'application/json']) {
    const res = await fetch(`${gw.url}/v1/videos/${ids[3]}/content`, {
      headers: { authorization: `Bearer ${key}`, ...(accept ? { accept } : {}) },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toMatchObject({ id: ids[3], status: 'completed', video_url: expect.any(String) });
  }
});
