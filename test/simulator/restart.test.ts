/**
 * A simulator started again (after a crash: nothing of the first one survives but what it
 * answered) serves the jobs and characters the first one created, from their ids: the same
 * outcome and progress timeline, content, remix, characters cast in a create, Veo operations
 * and their files. test/e2e/crash-restart.test.ts does the same with a process killed by SIGKILL.
 */
import { startSimulator, type RunningSimulator } from '../../simulator/server';
import { SAMPLE_MP4 } from '../../simulator/assets';

interface Video {
  id: string;
  model: string;
  status: string;
  progress: number;
  created_at: number;
  completed_at: number | null;
  prompt: string | null;
  seconds: string;
  size: string;
  remixed_from_video_id: string | null;
  error: { code: string } | null;
}
interface SimJob {
  id: string;
  flavor: string;
  model: string | null;
  prompt: string | null;
  status: string;
  outcome: string;
  createdAt: number;
  durationMs: number;
}
interface Operation {
  name: string;
  done?: boolean;
  error?: { code: number };
  response?: { generateVideoResponse: { generatedSamples?: { video: { uri: string } }[]; raiMediaFilteredCount?: number } };
}

const AUTH = { authorization: 'Bearer sk-test' };
const JSON_AUTH = { ...AUTH, 'content-type': 'application/json' };
const GKEY = { 'x-goog-api-key': 'AIza-test', 'content-type': 'application/json' };
const VEO = 'veo-3.1-generate-preview';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let first: RunningSimulator | undefined;
let second: RunningSimulator | undefined;
afterEach(async () => {
  await first?.close();
  await second?.close();
  first = second = undefined;
});

async function json<T>(res: Response): Promise<T> {
  expect(res.status).toBe(200);
  return (await res.json()) as T;
}
const createVideo = (sim: RunningSimulator, body: Record<string, unknown>) =>
  fetch(`${sim.url}/v1/videos`, { method: 'POST', headers: JSON_AUTH, body: JSON.stringify(body) });
const getVideo = (sim: RunningSimulator, id: string) => fetch(`${sim.url}/v1/videos/${id}`, { headers: AUTH });
const simJob = async (sim: RunningSimulator, id: string) => json<SimJob>(await fetch(`${sim.url}/_sim/jobs/${id}`));
const predict = (sim: RunningSimulator, body: unknown, model = VEO) =>
  fetch(`${sim.url}/v1beta/models/${model}:predictLongRunning`, { method: 'POST', headers: GKEY, body: JSON.stringify(body) });
const poll = (sim: RunningSimulator, name: string) => fetch(`${sim.url}/v1beta/${name}`, { headers: GKEY });

async function waitDone(sim: RunningSimulator, id: string): Promise<Video> {
  for (;;) {
    const v = await json<Video>(await getVideo(sim, id));
    if (v.status === 'completed' || v.status === 'failed') return v;
    await sleep(50);
  }
}

test('OpenAI-style videos: status, progress, content, remix and delete after a restart', async () => {
  first = await startSimulator({ jobMs: 60_000 });
  const made = await json<Video>(await createVideo(first, { prompt: 'a fox [sim:ms=1200]', model: 'sora-2-pro', seconds: '12', size: '1792x1024' }));
  const failing = await json<Video>(await createVideo(first, { prompt: 'doomed [sim:fail][sim:ms=900]' }));
  const long = await json<Video>(await createVideo(first, { prompt: 'long [sim:ms=600000]', seconds: '8', size: '480x480' }));
  await sleep(300);
  const before = await json<Video>(await getVideo(first, made.id));
  const views = await Promise.all([made, failing, long].map((v) => simJob(first!, v.id)));
  await first.close();
  first = undefined;

  second = await startSimulator({ jobMs: 60_000 });
  // The same timeline: creation time, duration and outcome come from the id.
  for (const view of views) {
    expect(await simJob(second, view.id)).toMatchObject({
      id: view.id,
      flavor: 'openai',
      model: view.model,
      createdAt: view.createdAt,
      durationMs: view.durationMs,
      outcome: view.outcome,
      prompt: null,
    });
  }
  const after = await json<Video>(await getVideo(second, made.id));
  expect(after).toMatchObject({
    id: made.id,
    model: 'sora-2-pro',
    seconds: '12',
    size: '1792x1024',
    created_at: made.created_at,
    prompt: null,
    remixed_from_video_id: null,
  });
  expect(after.progress).toBeGreaterThanOrEqual(before.progress);
  expect(await json<Video>(await getVideo(second, long.id))).toMatchObject({ status: 'queued', progress: 0, seconds: '8', size: '480x480' });

  const done = await waitDone(second, made.id);
  expect(done).toMatchObject({ status: 'completed', progress: 100, completed_at: Math.floor((views[0]!.createdAt + 1200) / 1000) });
  const content = await fetch(`${second.url}/v1/videos/${made.id}/content`, { headers: AUTH });
  expect(content.status).toBe(200);
  expect(Buffer.from(await content.arrayBuffer()).equals(SAMPLE_MP4)).toBe(true);
  expect(await waitDone(second, failing.id)).toMatchObject({ status: 'failed', error: { code: 'generation_failed' } });

  const remix = await json<Video>(
    await fetch(`${second.url}/v1/videos/${made.id}/remix`, { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ prompt: 'again' }) }),
  );
  expect(remix).toMatchObject({ remixed_from_video_id: made.id, model: 'sora-2-pro', seconds: '12', size: '1792x1024', status: 'queued' });

  // A mistyped id is still unknown, and a deleted one stays deleted.
  const typo = made.id.slice(0, -1) + (made.id.endsWith('0') ? '1' : '0');
  expect((await getVideo(second, typo)).status).toBe(404);
  expect((await fetch(`${second.url}/v1/videos/${made.id}`, { method: 'DELETE', headers: AUTH })).status).toBe(200);
  expect((await getVideo(second, made.id)).status).toBe(404);
  // /_sim/reset forgets the earlier process's jobs too.
  expect((await fetch(`${second.url}/_sim/reset`, { method: 'POST' })).status).toBe(200);
  expect((await getVideo(second, failing.id)).status).toBe(404);
});

test('characters are accepted by a restarted simulator', async () => {
  first = await startSimulator({ jobMs: 500 });
  const form = new FormData();
  form.append('name', 'hero');
  form.append('self_portrait', 'true');
  form.append('video', new Blob([new Uint8Array(SAMPLE_MP4)], { type: 'video/mp4' }), 'clip.mp4');
  const character = await json<{ id: string; name: string; created_at: number }>(
    await fetch(`${first.url}/v1/videos/characters`, { method: 'POST', headers: AUTH, body: form }),
  );
  await first.close();
  first = undefined;

  second = await startSimulator({ jobMs: 500 });
  // The name is the one thing an id cannot hold.
  expect(await json(await fetch(`${second.url}/v1/videos/characters/${character.id}`, { headers: AUTH }))).toEqual({
    id: character.id,
    name: null,
    created_at: character.created_at,
    self_portrait: true,
  });
  expect((await fetch(`${second.url}/v1/videos/characters/${character.id}/profile_picture`, { headers: AUTH })).status).toBe(200);
  const cast = await json<Video>(await createVideo(second, { prompt: 'with the hero', characters: [character.id] }));
  expect((await simJob(second, cast.id)).status).toBe('queued');
  expect((await fetch(`${second.url}/v1/videos/characters/char_${'0'.repeat(32)}`, { headers: AUTH })).status).toBe(404);
});

test('Veo operations, their files and signed blob links after a restart', async () => {
  first = await startSimulator({ jobMs: 60_000 });
  const ok = await json<Operation>(
    await predict(first, { instances: [{ prompt: 'sea [sim:ms=800]' }], parameters: { aspectRatio: '9:16', durationSeconds: 6, sampleCount: 2 } }),
  );
  const filtered = await json<Operation>(await predict(first, { instances: [{ prompt: 'x [sim:filtered][sim:ms=300]' }] }));
  const failed = await json<Operation>(await predict(first, { instances: [{ prompt: 'x [sim:fail][sim:ms=300]' }] }));
  const early = await json<Operation>(await predict(first, { instances: [{ prompt: 'early [sim:ms=0]' }] }));
  const earlyOp = await json<Operation>(await poll(first, early.name));
  const earlyUri = earlyOp.response?.generateVideoResponse.generatedSamples?.[0]?.video.uri ?? '';
  const redirect = await fetch(earlyUri, { headers: GKEY, redirect: 'manual' });
  expect(redirect.status).toBe(302);
  const blobPath = new URL(redirect.headers.get('location') ?? '').pathname + new URL(redirect.headers.get('location') ?? '').search;
  expect(await json<Operation>(await poll(first, ok.name))).toEqual({ name: ok.name, done: false });
  const view = await simJob(first, ok.name.split('/').pop()!);
  await first.close();
  first = undefined;

  second = await startSimulator({ jobMs: 60_000 });
  const opId = ok.name.split('/').pop()!;
  expect(await simJob(second, opId)).toMatchObject({ flavor: 'veo', model: null, createdAt: view.createdAt, durationMs: 800, outcome: 'success' });
  // A link signed before the restart still downloads.
  const blob = await fetch(`${second.url}${blobPath}`);
  expect(blob.status).toBe(200);
  expect(Buffer.from(await blob.arrayBuffer()).equals(SAMPLE_MP4)).toBe(true);

  let done: Operation;
  do {
    done = await json<Operation>(await poll(second, ok.name));
    if (!done.done) await sleep(50);
  } while (!done.done);
  const samples = done.response?.generateVideoResponse.generatedSamples ?? [];
  expect(samples).toHaveLength(2);
  const file = await fetch(samples[1]!.video.uri.replace(/^http:\/\/[^/]+/, second.url), { headers: GKEY });
  expect(file.status).toBe(200);
  expect(Buffer.from(await file.arrayBuffer()).equals(SAMPLE_MP4)).toBe(true);
  expect((await json<Operation>(await poll(second, filtered.name))).response?.generateVideoResponse.raiMediaFilteredCount).toBe(1);
  expect((await json<Operation>(await poll(second, failed.name))).error?.code).toBe(13);
  // The id carries a hash of its model: the operation is unknown under another model.
  expect((await poll(second, ok.name.replace(VEO, 'veo-2.0-generate-001'))).status).toBe(404);
});
