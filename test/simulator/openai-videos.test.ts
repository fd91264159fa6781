import OpenAI, { toFile } from 'openai';
import { startSimulator, type RunningSimulator } from '../../simulator/server';
import { PROFILE_PNG, SAMPLE_MP4, SPRITESHEET_JPEG, THUMBNAIL_PNG } from '../../simulator/assets';

interface Video {
  id: string;
  object: string;
  model: string;
  status: string;
  progress: number;
  created_at: number;
  completed_at: number | null;
  expires_at: number | null;
  prompt: string;
  seconds: string;
  size: string;
  remixed_from_video_id: string | null;
  error: { code: string; message: string } | null;
}
interface OpenAIError {
  error: { message: string; type: string; param: string | null; code: string | null };
}
interface VideoList {
  object: string;
  data: Video[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

const AUTH = { authorization: 'Bearer sk-test' };
const JSON_AUTH = { ...AUTH, 'content-type': 'application/json' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PNG_1PX = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await startSimulator({ jobMs: 300 });
});
afterAll(async () => {
  await sim.close();
});

async function createJson(body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${sim.url}/v1/videos`, { method: 'POST', headers: { ...JSON_AUTH, ...headers }, body: JSON.stringify(body) });
}
async function get(path: string): Promise<Response> {
  return fetch(`${sim.url}${path}`, { headers: AUTH });
}
async function video(res: Response): Promise<Video> {
  return (await res.json()) as Video;
}
async function oaiError(res: Response): Promise<OpenAIError['error']> {
  return ((await res.json()) as OpenAIError).error;
}
/** A completed video, created with a short duration. */
async function completedVideo(prompt: string): Promise<Video> {
  const v = await video(await createJson({ prompt: `${prompt} [sim:ms=20]` }));
  await sleep(40);
  const done = await video(await get(`/v1/videos/${v.id}`));
  expect(done.status).toBe('completed');
  return done;
}

describe('POST /v1/videos', () => {
  it('creates from multipart with every Video key present', async () => {
    const form = new FormData();
    form.append('prompt', 'a red fox in snow');
    form.append('model', 'sora-2-pro');
    form.append('seconds', '12');
    form.append('size', '1792x1024');
    form.append('input_reference', new Blob([PNG_1PX], { type: 'image/png' }), 'ref.png');
    const res = await fetch(`${sim.url}/v1/videos`, { method: 'POST', headers: AUTH, body: form });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
    const v = await video(res);
    expect(Object.keys(v).sort()).toEqual([
      'completed_at',
      'created_at',
      'error',
      'expires_at',
      'id',
      'model',
      'object',
      'progress',
      'prompt',
      'remixed_from_video_id',
      'seconds',
      'size',
      'status',
    ]);
    expect(v.id).toMatch(/^video_[0-9a-f]{32}$/);
    expect(v).toMatchObject({
      object: 'video',
      model: 'sora-2-pro',
      status: 'queued',
      progress: 0,
      prompt: 'a red fox in snow',
      seconds: '12',
      size: '1792x1024',
      completed_at: null,
      expires_at: null,
      remixed_from_video_id: null,
      error: null,
    });
    expect(Math.abs(v.created_at - Date.now() / 1000)).toBeLessThan(5);
  });

  it('creates from JSON with defaults and accepts the compatible-provider superset', async () => {
    const v = await video(await createJson({ prompt: 'defaults' }));
    expect(v).toMatchObject({ model: 'sora-2', seconds: '4', size: '720x1280' });
    const w = await video(await createJson({ prompt: 'superset', seconds: 25, size: '1080x1080' }));
    expect(w).toMatchObject({ seconds: '25', size: '1080x1080' });
    const x = await video(await createJson({ prompt: 'square', seconds: '10', size: '480x480' }));
    expect(x).toMatchObject({ seconds: '10', size: '480x480' });
  });

  it('accepts a JSON input_reference as a base64 image data URL', async () => {
    const ok = await createJson({ prompt: 'ref', input_reference: { image_url: `data:image/png;base64,${PNG_1PX.toString('base64')}` } });
    expect(ok.status).toBe(200);
    const bad = await createJson({ prompt: 'ref', input_reference: { image_url: 'https://example.com/a.png' } });
    expect(bad.status).toBe(400);
    expect((await oaiError(bad)).param).toBe('input_reference');
  });

  it.each([
    ['an unknown model', { model: 'sora-3', prompt: 'p' }, 'model', 'invalid_value'],
    ['unsupported seconds', { seconds: '7', prompt: 'p' }, 'seconds', 'invalid_value'],
    ['an unsupported size', { size: '100x100', prompt: 'p' }, 'size', 'invalid_value'],
    ['a missing prompt', { model: 'sora-2' }, 'prompt', 'missing_required_parameter'],
    ['an empty prompt', { prompt: '' }, 'prompt', 'invalid_value'],
    ['a 32001-character prompt', { prompt: 'x'.repeat(32001) }, 'prompt', 'invalid_value'],
    ['an unknown field', { prompt: 'p', colour: 'red' }, 'colour', 'unknown_parameter'],
  ])('rejects %s with a 400 naming the param', async (_label, body, param, code) => {
    const res = await createJson(body);
    expect(res.status).toBe(400);
    expect(res.headers.get('x-request-id')).toBeTruthy();
    const err = await oaiError(res);
    expect(err).toMatchObject({ type: 'invalid_request_error', param, code });
    expect(err.message.length).toBeGreaterThan(5);
  });

  it('accepts a prompt of exactly 32000 characters', async () => {
    expect((await createJson({ prompt: 'y'.repeat(32000) })).status).toBe(200);
  });

  it('rejects an input_reference that is not an image', async () => {
    const form = new FormData();
    form.append('prompt', 'p');
    form.append('input_reference', new Blob([Buffer.from('hello, not an image')], { type: 'image/png' }), 'fake.png');
    const res = await fetch(`${sim.url}/v1/videos`, { method: 'POST', headers: AUTH, body: form });
    expect(res.status).toBe(400);
    expect(await oaiError(res)).toMatchObject({ param: 'input_reference', type: 'invalid_request_error' });
  });

  it('requires a bearer key', async () => {
    const res = await fetch(`${sim.url}/v1/videos`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"prompt":"p"}' });
    expect(res.status).toBe(401);
    expect(res.headers.get('x-request-id')).toBeTruthy();
    expect((await oaiError(res)).type).toBe('invalid_request_error');
  });
});

describe('compatible-provider extensions', () => {
  it('accepts watermark, private and characters[] in multipart and records them', async () => {
    const charForm = new FormData();
    charForm.append('name', 'Ext hero');
    charForm.append('video', new Blob([SAMPLE_MP4], { type: 'video/mp4' }), 'c.mp4');
    charForm.append('timestamps', '1.5-4');
    const charRes = await fetch(`${sim.url}/v1/videos/characters`, { method: 'POST', headers: AUTH, body: charForm });
    expect(charRes.status).toBe(200);
    const { id: charId } = (await charRes.json()) as { id: string };

    const form = new FormData();
    form.set('model', 'sora-2');
    form.set('prompt', 'with extensions');
    form.set('watermark', 'false');
    form.set('private', 'true');
    form.append('characters[]', charId);
    form.set('input_reference', new Blob([PNG_1PX], { type: 'image/png' }), 'reference.png');
    const res = await fetch(`${sim.url}/v1/videos`, { method: 'POST', headers: AUTH, body: form });
    expect(res.status).toBe(200);
    const v = await video(res);
    const meta = (await (await fetch(`${sim.url}/_sim/jobs/${v.id}`)).json()) as { params: Record<string, unknown> };
    expect(meta.params).toEqual({ inputReference: 'image/png', watermark: false, private: true, characters: [charId] });

    const json = await createJson({ prompt: 'json ext', watermark: true, characters: [charId] });
    expect(json.status).toBe(200);
  });

  it('rejects unknown characters and malformed extension values', async () => {
    const form = new FormData();
    form.set('prompt', 'who?');
    form.append('characters[]', 'char_missing');
    const res = await fetch(`${sim.url}/v1/videos`, { method: 'POST', headers: AUTH, body: form });
    expect(res.status).toBe(400);
    expect(await oaiError(res)).toMatchObject({ param: 'characters', code: 'character_not_found' });
    const badBool = await createJson({ prompt: 'p', watermark: 'maybe' });
    expect(badBool.status).toBe(400);
    expect((await oaiError(badBool)).param).toBe('watermark');
    const twice = new FormData();
    twice.append('prompt', 'a');
    twice.append('prompt', 'b');
    const dup = await fetch(`${sim.url}/v1/videos`, { method: 'POST', headers: AUTH, body: twice });
    expect(dup.status).toBe(400);
    expect((await oaiError(dup)).param).toBe('prompt');
  });
});

describe('GET /v1/videos/{id}', () => {
  it('moves queued -> in_progress -> completed with monotonic progress, 100 only when completed', async () => {
    const v = await video(await createJson({ prompt: 'lifecycle [sim:ms=600]' }));
    const seen: Video[] = [];
    for (let i = 0; i < 60; i += 1) {
      const cur = await video(await get(`/v1/videos/${v.id}`));
      seen.push(cur);
      if (cur.status === 'completed') break;
      await sleep(20);
    }
    const statuses = seen.map((s) => s.status);
    expect(statuses).toContain('in_progress');
    expect(statuses[statuses.length - 1]).toBe('completed');
    for (let i = 1; i < seen.length; i += 1) {
      expect(seen[i]!.progress).toBeGreaterThanOrEqual(seen[i - 1]!.progress);
    }
    for (const s of seen) {
      expect(Number.isInteger(s.progress)).toBe(true);
      if (s.status !== 'completed') expect(s.progress).toBeLessThan(100);
      if (s.status === 'queued') expect(s.progress).toBe(0);
    }
    const done = seen[seen.length - 1]!;
    expect(done.progress).toBe(100);
    expect(done.completed_at).not.toBeNull();
    expect(done.expires_at).toBeGreaterThan(done.completed_at!);
    const middle = seen.filter((s) => s.status === 'in_progress').map((s) => s.progress);
    expect(Math.max(...middle)).toBeGreaterThan(0); // it actually rises
  });

  it('404s unknown ids in the OpenAI error shape', async () => {
    const res = await get('/v1/videos/video_doesnotexist');
    expect(res.status).toBe(404);
    expect(await oaiError(res)).toMatchObject({ type: 'invalid_request_error', code: 'video_not_found' });
  });
});

describe('GET /v1/videos/{id}/content', () => {
  it('serves every variant with its content type once completed', async () => {
    const v = await completedVideo('content');
    const mp4 = await get(`/v1/videos/${v.id}/content`);
    expect(mp4.status).toBe(200);
    expect(mp4.headers.get('content-type')).toBe('video/mp4');
    expect(mp4.headers.get('content-length')).toBe(String(SAMPLE_MP4.length));
    expect(Buffer.from(await mp4.arrayBuffer()).equals(SAMPLE_MP4)).toBe(true);
    const explicit = await get(`/v1/videos/${v.id}/content?variant=video`);
    expect(explicit.headers.get('content-type')).toBe('video/mp4');
    await explicit.arrayBuffer();
    const thumb = await get(`/v1/videos/${v.id}/content?variant=thumbnail`);
    expect(thumb.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await thumb.arrayBuffer()).equals(THUMBNAIL_PNG)).toBe(true);
    const sprite = await get(`/v1/videos/${v.id}/content?variant=spritesheet`);
    expect(sprite.headers.get('content-type')).toBe('image/jpeg');
    expect(Buffer.from(await sprite.arrayBuffer()).equals(SPRITESHEET_JPEG)).toBe(true);
    const bad = await get(`/v1/videos/${v.id}/content?variant=gif`);
    expect(bad.status).toBe(400);
    expect((await oaiError(bad)).param).toBe('variant');
  });

  it('supports a byte range on the video', async () => {
    const v = await completedVideo('range');
    const res = await fetch(`${sim.url}/v1/videos/${v.id}/content`, { headers: { ...AUTH, range: 'bytes=4-11' } });
    expect(res.status).toBe(206);
    expect(Buffer.from(await res.arrayBuffer()).toString('latin1')).toBe('ftypisom');
  });

  it('says not ready before completion', async () => {
    const v = await video(await createJson({ prompt: 'not yet [sim:ms=5000]' }));
    const res = await get(`/v1/videos/${v.id}/content`);
    expect(res.status).toBe(404);
    const err = await oaiError(res);
    expect(err.code).toBe('video_not_ready');
    expect(err.message).toMatch(/not ready/);
  });
});

describe('POST /v1/videos/{id}/remix', () => {
  it('creates a new video remixed from a completed one', async () => {
    const src = await completedVideo('remix source');
    const res = await fetch(`${sim.url}/v1/videos/${src.id}/remix`, { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ prompt: 'now at night' }) });
    expect(res.status).toBe(200);
    const r = await video(res);
    expect(r.id).not.toBe(src.id);
    expect(r).toMatchObject({
      remixed_from_video_id: src.id,
      prompt: 'now at night',
      status: 'queued',
      model: src.model,
      size: src.size,
      seconds: src.seconds,
    });
    const meta = (await (await fetch(`${sim.url}/_sim/jobs/${r.id}`)).json()) as { remixedFrom: string };
    expect(meta.remixedFrom).toBe(src.id);
  });

  it('refuses sources that are missing or not completed', async () => {
    const missing = await fetch(`${sim.url}/v1/videos/video_nope/remix`, { method: 'POST', headers: JSON_AUTH, body: '{"prompt":"x"}' });
    expect(missing.status).toBe(404);
    const running = await video(await createJson({ prompt: 'still running [sim:ms=5000]' }));
    const res = await fetch(`${sim.url}/v1/videos/${running.id}/remix`, { method: 'POST', headers: JSON_AUTH, body: '{"prompt":"x"}' });
    expect(res.status).toBe(400);
    expect((await oaiError(res)).code).toBe('invalid_video_state');
    const noPrompt = await fetch(`${sim.url}/v1/videos/${running.id}/remix`, { method: 'POST', headers: JSON_AUTH, body: '{}' });
    expect(noPrompt.status).toBe(400);
    expect((await oaiError(noPrompt)).param).toBe('prompt');
  });
});

describe('list and delete', () => {
  it('lists with order, limit and after cursors', async () => {
    const local = await startSimulator({ jobMs: 50 });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 5; i += 1) {
        const res = await fetch(`${local.url}/v1/videos`, { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ prompt: `list ${i}` }) });
        ids.push((await video(res)).id);
      }
      const listOf = async (qs: string) => (await (await fetch(`${local.url}/v1/videos${qs}`, { headers: AUTH })).json()) as VideoList;
      const all = await listOf('');
      expect(all.object).toBe('list');
      expect(all.data.map((v) => v.id)).toEqual([...ids].reverse());
      expect(all.has_more).toBe(false);
      const asc = await listOf('?order=asc&limit=2');
      expect(asc.data.map((v) => v.id)).toEqual(ids.slice(0, 2));
      expect(asc).toMatchObject({ first_id: ids[0], last_id: ids[1], has_more: true });
      const next = await listOf(`?order=asc&limit=2&after=${ids[1]}`);
      expect(next.data.map((v) => v.id)).toEqual(ids.slice(2, 4));
      const last = await listOf(`?order=asc&limit=2&after=${ids[3]}`);
      expect(last.data.map((v) => v.id)).toEqual([ids[4]]);
      expect(last.has_more).toBe(false);
      const empty = await listOf('?limit=0');
      expect(empty).toMatchObject({ data: [], first_id: null, last_id: null, has_more: true });
      const bad = await fetch(`${local.url}/v1/videos?limit=101`, { headers: AUTH });
      expect(bad.status).toBe(400);
      expect((await oaiError(bad)).param).toBe('limit');
    } finally {
      await local.close();
    }
  });

  it('deletes finished videos only', async () => {
    const running = await video(await createJson({ prompt: 'delete running [sim:ms=5000]' }));
    const refused = await fetch(`${sim.url}/v1/videos/${running.id}`, { method: 'DELETE', headers: AUTH });
    expect(refused.status).toBe(400);
    const done = await completedVideo('delete me');
    const res = await fetch(`${sim.url}/v1/videos/${done.id}`, { method: 'DELETE', headers: AUTH });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: done.id, object: 'video.deleted', deleted: true });
    expect((await get(`/v1/videos/${done.id}`)).status).toBe(404);
    expect((await fetch(`${sim.url}/v1/videos/${done.id}`, { method: 'DELETE', headers: AUTH })).status).toBe(404);
  });

  it('cancels a running video on DELETE when it was made [sim:cancellable], as some compatible providers do', async () => {
    const running = await video(await createJson({ prompt: 'cancel running [sim:ms=5000][sim:cancellable]' }));
    const res = await fetch(`${sim.url}/v1/videos/${running.id}`, { method: 'DELETE', headers: AUTH });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: running.id, object: 'video.deleted', deleted: true });
    expect((await get(`/v1/videos/${running.id}`)).status).toBe(404);
    expect((await fetch(`${sim.url}/_sim/jobs/${running.id}`)).status).toBe(404);
  });
});

describe('characters', () => {
  function characterForm(name: string, bytes: Buffer = SAMPLE_MP4): FormData {
    const form = new FormData();
    form.append('name', name);
    form.append('video', new Blob([bytes], { type: 'video/mp4' }), 'clip.mp4');
    return form;
  }

  it('creates, reads back and serves a profile picture', async () => {
    const res = await fetch(`${sim.url}/v1/videos/characters`, { method: 'POST', headers: AUTH, body: characterForm('Captain Nemo') });
    expect(res.status).toBe(200);
    const c = (await res.json()) as { id: string; name: string; created_at: number };
    expect(c.id).toMatch(/^char_[0-9a-f]{32}$/);
    expect(c.name).toBe('Captain Nemo');
    expect(Math.abs(c.created_at - Date.now() / 1000)).toBeLessThan(5);
    const again = await get(`/v1/videos/characters/${c.id}`);
    expect(await again.json()).toEqual(c);
    const pic = await get(`/v1/videos/characters/${c.id}/profile_picture`);
    expect(pic.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await pic.arrayBuffer()).equals(PROFILE_PNG)).toBe(true);
    expect((await get('/v1/videos/characters/char_missing')).status).toBe(404);
    expect((await get('/v1/videos/characters/char_missing/profile_picture')).status).toBe(404);
  });

  it('validates name and video', async () => {
    const notMp4 = await fetch(`${sim.url}/v1/videos/characters`, {
      method: 'POST',
      headers: AUTH,
      body: characterForm('x', Buffer.from('definitely not a video file')),
    });
    expect(notMp4.status).toBe(400);
    expect((await oaiError(notMp4)).param).toBe('video');
    const longName = await fetch(`${sim.url}/v1/videos/characters`, { method: 'POST', headers: AUTH, body: characterForm('n'.repeat(81)) });
    expect(longName.status).toBe(400);
    expect((await oaiError(longName)).param).toBe('name');
    const noVideo = new FormData();
    noVideo.append('name', 'solo');
    const missing = await fetch(`${sim.url}/v1/videos/characters`, { method: 'POST', headers: AUTH, body: noVideo });
    expect(missing.status).toBe(400);
    expect(await oaiError(missing)).toMatchObject({ param: 'video', code: 'missing_required_parameter' });
  });
});

describe('Idempotency-Key', () => {
  it('replays the original response and creates nothing new', async () => {
    const local = await startSimulator({ jobMs: 50 });
    try {
      const send = (key: string, prompt: string) =>
        fetch(`${local.url}/v1/videos`, {
          method: 'POST',
          headers: { ...JSON_AUTH, 'idempotency-key': key },
          body: JSON.stringify({ prompt }),
        });
      const first = await video(await send('k-1', 'idem'));
      const replay = await send('k-1', 'idem');
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(await video(replay)).toEqual(first);
      const other = await video(await send('k-2', 'idem'));
      expect(other.id).not.toBe(first.id);
      const stats = (await (await fetch(`${local.url}/_sim/stats`)).json()) as { jobsCreated: { openai: number } };
      expect(stats.jobsCreated.openai).toBe(2);
      const meta = (await (await fetch(`${local.url}/_sim/jobs/${first.id}`)).json()) as { idempotencyKey: string };
      expect(meta.idempotencyKey).toBe('k-1');
    } finally {
      await local.close();
    }
  });
});

describe('official openai SDK against the simulator', () => {
  it('creates, retrieves, downloads, remixes, lists and deletes', async () => {
    const client = new OpenAI({ apiKey: 'sk-sdk', baseURL: `${sim.url}/v1`, maxRetries: 0 });
    const created = await client.videos.create({ prompt: 'sdk test [sim:ms=30]', model: 'sora-2', seconds: '8', size: '1280x720' });
    expect(created.status).toBe('queued');
    await sleep(50);
    const got = await client.videos.retrieve(created.id);
    expect(got.status).toBe('completed');
    const content = await client.videos.downloadContent(created.id);
    expect(Buffer.from(await content.arrayBuffer()).equals(SAMPLE_MP4)).toBe(true);
    const remix = await client.videos.remix(created.id, { prompt: 'sdk remix' });
    expect(remix.remixed_from_video_id).toBe(created.id);
    const page = await client.videos.list({ limit: 100 });
    expect(page.data.some((v) => v.id === created.id)).toBe(true);
    const character = await client.videos.createCharacter({ name: 'sdk char', video: await toFile(SAMPLE_MP4, 'c.mp4', { type: 'video/mp4' }) });
    expect(character.name).toBe('sdk char');
    const deleted = await client.videos.delete(created.id);
    expect(deleted).toMatchObject({ id: created.id, deleted: true, object: 'video.deleted' });
    await expect(client.videos.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
  });
});
