/**
 * The /v1/videos family on the real stack, driven through the official `openai` SDK where it
 * has the call (videos.create, videos.retrieve), and raw multipart for the rest.
 */
import OpenAI, { toFile } from 'openai';
import { Client, Connection } from '@temporalio/client';
import { THUMBNAIL_PNG } from '../../simulator/assets';
import { call, createTask, queryTask, waitForTerminal } from '../support/client';
import { e2eEnv, startGateway, type Gateway } from '../support/stack';
import { upstreamJobOf } from '../support/upstream';

let gw: Gateway;
let key: string;
let openai: OpenAI;
let temporal: Client;
const MAX_FILE = 256 * 1024;

beforeAll(async () => {
  gw = await startGateway({ env: { FETCH_MAX_BYTES: String(MAX_FILE) } });
  key = await gw.issueKey('videos');
  openai = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  temporal = new Client({ connection: await Connection.connect({ address: e2eEnv().temporalAddress }) });
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await temporal?.connection.close();
}, 120_000);

type Params = OpenAI.Videos.VideoCreateParams;
const seconds = (s: string) => s as Params['seconds'];
const size = (s: string) => s as Params['size'];

async function retrieveUntilDone(id: string): Promise<{ final: Record<string, unknown>; progress: number[] }> {
  const progress: number[] = [];
  for (;;) {
    const video = (await openai.videos.retrieve(id)) as unknown as Record<string, unknown>;
    progress.push(video.progress as number);
    if (video.status === 'completed' || video.status === 'failed') return { final: video, progress };
    await new Promise((r) => setTimeout(r, 150));
  }
}

async function simulatorParams(taskId: string): Promise<Record<string, unknown>> {
  const job = await upstreamJobOf(temporal, gw.simulatorUrl, taskId);
  return { ...job.params, model: job.model };
}

test('motion-2 through openai.videos.create and retrieve: pending, integer seconds, progress up to 100', async () => {
  const created = (await openai.videos.create({
    model: 'motion-2',
    prompt: 'a kite over the sea [sim:ms=1200]',
    seconds: seconds('8'),
    size: size('1280x720'),
  })) as unknown as Record<string, unknown>;
  expect(created.id).toMatch(/^motion-2:\d+-[a-z0-9]+$/);
  expect(created).toEqual({
    id: created.id,
    object: 'video',
    model: 'motion-2',
    status: 'pending',
    progress: 0,
    created_at: expect.any(Number),
    seconds: 8,
    size: '1280x720',
  });

  const { final, progress } = await retrieveUntilDone(created.id as string);
  expect(final.status).toBe('completed');
  expect(Object.keys(final).sort()).toEqual(['id', 'model', 'progress', 'seconds', 'size', 'status', 'video_url']);
  expect(final).toMatchObject({ model: 'motion-2', seconds: 8, size: '1280x720', progress: 100 });
  for (let i = 1; i < progress.length; i++) expect(progress[i]!).toBeGreaterThanOrEqual(progress[i - 1]!);
  expect((await fetch(final.video_url as string)).headers.get('content-type')).toBe('video/mp4');
  expect(await simulatorParams(created.id as string)).toMatchObject({ model: 'sora-2', watermark: true, private: false });
});

test('vidgen_3_1 with an uploaded input_reference: video_<uuid>, queued, then the vidgen status shape', async () => {
  const created = (await openai.videos.create({
    model: 'vidgen_3_1-fast',
    prompt: 'a bakery at dawn [sim:ms=800]',
    seconds: seconds('6'),
    size: size('720x1280'),
    input_reference: await toFile(THUMBNAIL_PNG, 'ref.png', { type: 'image/png' }),
  })) as unknown as Record<string, unknown>;
  expect(created.id).toMatch(/^video_[0-9a-f-]{36}$/);
  expect(created).toMatchObject({ object: 'video', model: 'vidgen_3_1-fast', status: 'queued', progress: 0, seconds: 6, size: '720x1280' });

  const { final } = await retrieveUntilDone(created.id as string);
  expect(final.status).toBe('completed');
  expect(Object.keys(final).sort()).toEqual(['enhanced_prompt', 'id', 'progress', 'status', 'status_update_time', 'video_url']);
  const params = await simulatorParams(created.id as string);
  expect(params.model).toBe('veo-3.1-fast-generate-preview');
  expect(JSON.stringify(params)).toMatch(/9:16/);

  const content = await call<Record<string, unknown>>(`${gw.url}/v1/videos/${encodeURIComponent(created.id as string)}/content`, { key });
  expect(content.status).toBe(200);
  expect(Object.keys(content.body).sort()).toEqual(['enhanced_prompt', 'id', 'status', 'status_update_time', 'video_url']);
  expect(content.body.status).toBe('completed');
  expect((await fetch(content.body.video_url as string)).status).toBe(200);
});

test('content of a task not completed yet is a 409 that states its status; of a failed one, why', async () => {
  const running = (await openai.videos.create({
    model: 'motion-2-pro',
    prompt: 'slow [sim:ms=4000]',
    seconds: seconds('25'),
    size: size('1080x1080'),
  })) as unknown as { id: string };
  const early = await call<{ error: { code: string; message: string } }>(`${gw.url}/v1/videos/${encodeURIComponent(running.id)}/content`, { key });
  expect(early.status).toBe(409);
  expect(early.body.error.code).toBe('video_not_ready');
  expect(early.body.error.message).toMatch(/pending|processing/);

  const failed = (await openai.videos.create({
    model: 'motion-2',
    prompt: 'bad luck [sim:fail] [sim:ms=200]',
    seconds: seconds('4'),
    size: size('480x480'),
  })) as unknown as { id: string };
  const { final } = await retrieveUntilDone(failed.id);
  expect(final.status).toBe('failed');
  expect((final.error as { code: string }).code).toBe('upstream_failed');
  const late = await call<{ error: { code: string } }>(`${gw.url}/v1/videos/${encodeURIComponent(failed.id)}/content`, { key });
  expect(late.status).toBe(409);
  expect(late.body.error.code).toBe('video_failed');
});

test('one task, every view: /v1/video/create tasks read through /v1/videos and the other way round', async () => {
  const fromJson = await createTask(gw.url, key, { model: 'motion-2', prompt: 'json born [sim:ms=300]', images: [], orientation: 'landscape' });
  await waitForTerminal(gw.url, key, fromJson.id);
  const asVideo = (await openai.videos.retrieve(fromJson.id)) as unknown as Record<string, unknown>;
  expect(asVideo).toMatchObject({ id: fromJson.id, status: 'completed', model: 'motion-2', seconds: 10, size: '1280x720', progress: 100 });

  const fromMultipart = (await openai.videos.create({
    model: 'motion-2',
    prompt: 'multipart born [sim:ms=300]',
    seconds: seconds('12'),
    size: size('720x1280'),
  })) as unknown as { id: string };
  const { final } = await waitForTerminal(gw.url, key, fromMultipart.id);
  expect(final.status).toBe('completed');
  expect(Object.keys(final).sort()).toEqual(['enhanced_prompt', 'id', 'status', 'status_update_time', 'video_url']);
});

test('style and metadata reach the provider; another key sees 404', async () => {
  const form = new FormData();
  for (const [k, v] of Object.entries({
    model: 'motion-2',
    prompt: 'styled [sim:ms=200]',
    seconds: '4',
    size: '480x480',
    style: 'anime',
    metadata: '{"order":42}',
    watermark: 'false',
    private: 'true',
  }))
    form.set(k, v);
  const res = await fetch(`${gw.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  expect(res.status).toBe(200);
  const { id } = (await res.json()) as { id: string };
  await waitForTerminal(gw.url, key, id);
  expect(await simulatorParams(id)).toMatchObject({ style: 'anime', metadata: { order: 42 }, watermark: false, private: true });

  const other = await gw.issueKey('other');
  const foreign = await call(`${gw.url}/v1/videos/${encodeURIComponent(id)}`, { key: other });
  const unknown = await call(`${gw.url}/v1/videos/${encodeURIComponent(id.replace(/-[a-z0-9]+$/, '-zzzzzzzzzz'))}`, { key: other });
  expect(foreign.status).toBe(404);
  expect(foreign.body).toEqual(unknown.body);
  expect((await queryTask(gw.url, key, id)).status).toBe(200);
});

describe('bad input', () => {
  const post = async (fields: Record<string, string>, file?: { name?: string; bytes: Buffer; type?: string }) => {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.set(k, v);
    if (file) form.set(file.name ?? 'input_reference', new Blob([new Uint8Array(file.bytes)], { type: file.type ?? 'image/png' }), 'ref.png');
    const res = await fetch(`${gw.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    return { status: res.status, body: (await res.json()) as { error: { param: string | null; code: string | null; message: string } } };
  };
  const motion = { model: 'motion-2', prompt: 'x', seconds: '8', size: '720x1280' };
  const vidgen = { model: 'vidgen_3_1', prompt: 'x', seconds: '8', size: '16x9' };
  const png = { bytes: THUMBNAIL_PNG };

  test.each<[string, Record<string, string>, { name?: string; bytes: Buffer; type?: string } | null, string | null]>([
    ['vidgen_3_1 without input_reference', vidgen, null, 'input_reference'],
    ['an input_reference that is not an image', vidgen, { bytes: Buffer.from('not an image at all') }, 'input_reference'],
    ['input_reference sent as text', { ...motion, input_reference: 'http://example.com/a.png' }, null, 'input_reference'],
    ['seconds not a number', { ...motion, seconds: 'ten' }, null, 'seconds'],
    ['seconds the model does not allow', { ...motion, seconds: '5' }, null, 'seconds'],
    ['seconds vidgen_3_1 does not allow', { ...vidgen, seconds: '10' }, png, 'seconds'],
    ['size the model does not allow', { ...motion, size: '1920x1080' }, null, 'size'],
    ['size vidgen_3_1 does not allow', { ...vidgen, size: '1280x720' }, png, 'size'],
    ['missing prompt', { model: 'motion-2', seconds: '8', size: '720x1280' }, null, 'prompt'],
    ['missing seconds', { model: 'motion-2', prompt: 'x', size: '720x1280' }, null, 'seconds'],
    ['metadata that is not JSON', { ...motion, metadata: '{oops' }, null, 'metadata'],
    ['metadata that is a JSON array', { ...motion, metadata: '[1]' }, null, 'metadata'],
    ['watermark not a boolean', { ...motion, watermark: 'yes' }, null, 'watermark'],
    ['a motion field on vidgen_3_1', { ...vidgen, private: 'true' }, png, 'private'],
    ['an unknown field', { ...motion, colour: 'red' }, null, 'colour'],
    ['a model of the JSON family', { ...motion, model: 'vidgen3' }, null, 'model'],
    ['an unknown model', { ...motion, model: 'motion-9' }, null, 'model'],
    ['an unknown file field', motion, { name: 'reference', bytes: THUMBNAIL_PNG }, 'reference'],
    ['character span over 3 s', { ...motion, character_url: 'https://example.com/c.mp4', character_timestamps: '0,4' }, null, 'character_timestamps'],
  ])('400 for %s', async (_name, fields, file, param) => {
    const res = await post(fields, file ?? undefined);
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe(param);
    expect(res.body.error.message.length).toBeGreaterThan(10);
  });

  test('413 for a file over the limit, 400 for a JSON body', async () => {
    const big = await post(motion, { bytes: Buffer.alloc(MAX_FILE + 1024, 7) });
    expect(big.status).toBe(413);
    const json = await call<{ error: { code: string } }>(`${gw.url}/v1/videos`, { key, json: motion });
    expect(json.status).toBe(400);
    expect(json.body.error.code).toBe('unsupported_content_type');
  });

  test('404 for an unknown video, through the SDK error class', async () => {
    await expect(openai.videos.retrieve('motion-2:1795335070122-doesnotexist')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(new OpenAI({ apiKey: 'sk-proj-foreign', baseURL: `${gw.url}/v1`, maxRetries: 0 }).videos.retrieve('x')).rejects.toBeInstanceOf(
      OpenAI.AuthenticationError,
    );
  });
});

describe('remix', () => {
  async function completedMotion(prompt: string): Promise<string> {
    const created = (await openai.videos.create({ model: 'motion-2-pro', prompt, seconds: seconds('15'), size: size('720x1280') })) as unknown as {
      id: string;
    };
    const { final } = await retrieveUntilDone(created.id);
    expect(final.status).toBe('completed');
    return created.id;
  }

  test('openai.videos.remix of a completed motion task: a linked task with its own workflow', async () => {
    const sourceId = await completedMotion('the original [sim:ms=300]');
    const remix = (await openai.videos.remix(sourceId, { prompt: 'the same, at night [sim:ms=300]' })) as unknown as Record<string, unknown>;
    expect(remix.id).toMatch(/^motion-2-pro:remix-\d+-[a-z0-9]+$/);
    expect(remix).toEqual({ id: remix.id, object: 'video', status: 'pending', progress: 0 });

    const { final } = await retrieveUntilDone(remix.id as string);
    expect(final).toMatchObject({ status: 'completed', model: 'motion-2-pro', seconds: 15, size: '720x1280', progress: 100 });
    expect((await fetch(final.video_url as string)).status).toBe(200);

    // The upstream remix was called on the source's upstream job, which the source's workflow holds.
    const sourceJob = await upstreamJobOf(temporal, gw.simulatorUrl, sourceId);
    const remixJob = await upstreamJobOf(temporal, gw.simulatorUrl, remix.id as string);
    expect(remixJob.remixedFrom).toBe(sourceJob.id);
    expect(remixJob.id).not.toBe(sourceJob.id);
  });

  test('a size override is kept on the remix', async () => {
    const sourceId = await completedMotion('square later [sim:ms=200]');
    const res = await call<{ id: string }>(`${gw.url}/v1/videos/${encodeURIComponent(sourceId)}/remix`, {
      key,
      json: { prompt: 'square now [sim:ms=200]', size: '1080x1080' },
    });
    expect(res.status).toBe(200);
    const { final } = await retrieveUntilDone(res.body.id);
    expect(final).toMatchObject({ status: 'completed', size: '1080x1080' });
  });

  test('remix of an unfinished, failed, unknown, foreign or vidgen task, or without a prompt: a clear 4xx', async () => {
    const remix = (id: string, json: unknown = { prompt: 'again' }, k = key) =>
      call<{ error: { code: string; param: string | null } }>(`${gw.url}/v1/videos/${encodeURIComponent(id)}/remix`, { key: k, json });

    const running = (await openai.videos.create({
      model: 'motion-2',
      prompt: 'still going [sim:ms=5000]',
      seconds: seconds('4'),
      size: size('480x480'),
    })) as unknown as { id: string };
    const unfinished = await remix(running.id);
    expect(unfinished.status).toBe(409);
    expect(unfinished.body.error.code).toBe('invalid_video_state');

    const failed = (await openai.videos.create({
      model: 'motion-2',
      prompt: 'broken [sim:fail] [sim:ms=100]',
      seconds: seconds('4'),
      size: size('480x480'),
    })) as unknown as { id: string };
    await retrieveUntilDone(failed.id);
    expect((await remix(failed.id)).status).toBe(409);

    expect((await remix('motion-2:1795335070122-doesnotexist')).status).toBe(404);
    const sourceId = await completedMotion('mine [sim:ms=100]');
    expect((await remix(sourceId, { prompt: 'theirs' }, await gw.issueKey('stranger'))).status).toBe(404);

    const vidgen = await createTask(gw.url, key, { model: 'vidgen2', prompt: 'not remixable [sim:ms=100]' });
    await waitForTerminal(gw.url, key, vidgen.id);
    const notMotion = await remix(vidgen.id);
    expect(notMotion.status).toBe(400);
    expect(notMotion.body.error.code).toBe('unsupported_model');

    const noPrompt = await remix(sourceId, {});
    expect(noPrompt.status).toBe(400);
    expect(noPrompt.body.error.param).toBe('prompt');
    const badSize = await remix(sourceId, { prompt: 'x', size: '16x9' });
    expect(badSize.status).toBe(400);
    expect(badSize.body.error.param).toBe('size');
  });
});
