import { startSimulator, type RunningSimulator } from '../../simulator/server';
import { AttemptCounters, parseMarkers, pollFault, randomFault, submitFault } from '../../simulator/faults';
import { looksLikeMp4, MAX_VIDEO_KIB, SAMPLE_MP4, sampleVideo } from '../../simulator/assets';

interface Video {
  id: string;
  status: string;
  progress: number;
  error: { code: string; message: string } | null;
  completed_at: number | null;
  expires_at: number | null;
}
interface Operation {
  name: string;
  done?: boolean;
  error?: { code: number; message: string };
  response?: {
    generateVideoResponse: { generatedSamples?: Array<{ video: { uri: string } }>; raiMediaFilteredCount?: number; raiMediaFilteredReasons?: string[] };
  };
}
interface Stats {
  jobsCreated: { veo: number; openai: number };
  charactersCreated: number;
  requests: Record<string, number>;
  faults: Record<string, number>;
}

const AUTH = { authorization: 'Bearer sk-test', 'content-type': 'application/json' };
const GKEY = { 'x-goog-api-key': 'AIza-test', 'content-type': 'application/json' };
const MODEL = 'veo-3.0-generate-001';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await startSimulator({ jobMs: 300 });
});
afterAll(async () => {
  await sim.close();
});

const createVideo = (prompt: string, headers: Record<string, string> = {}) =>
  fetch(`${sim.url}/v1/videos`, { method: 'POST', headers: { ...AUTH, ...headers }, body: JSON.stringify({ prompt }) });
const createOp = (prompt: string, headers: Record<string, string> = {}) =>
  fetch(`${sim.url}/v1beta/models/${MODEL}:predictLongRunning`, {
    method: 'POST',
    headers: { ...GKEY, ...headers },
    body: JSON.stringify({ instances: [{ prompt }] }),
  });
const getVideo = (id: string) => fetch(`${sim.url}/v1/videos/${id}`, { headers: AUTH });
const getOp = (name: string) => fetch(`${sim.url}/v1beta/${name}`, { headers: GKEY });
const stats = async (): Promise<Stats> => (await (await fetch(`${sim.url}/_sim/stats`)).json()) as Stats;
const errorCode = async (res: Response): Promise<unknown> => ((await res.json()) as { error: { code: unknown } }).error.code;
const googleStatus = async (res: Response): Promise<string> => ((await res.json()) as { error: { status: string } }).error.status;

/** Unique per test so attempt counters never collide across tests or reruns. */
let seq = 0;
const uniq = (text: string) => `${text} #${Date.now()}-${(seq += 1)}`;

describe('marker parsing (unit)', () => {
  it('parses every marker and ignores unknown ones', () => {
    const m = parseMarkers(
      'x [sim:fail][sim:reject] [sim:filtered] [sim:drop=2] [sim:submit-429=3] [sim:submit-5xx=4] ' +
        '[sim:drop-after-create=5] [sim:poll-429=6] [sim:poll-5xx=7] [sim:content-5xx=8] [sim:slow=90] [sim:ms=1234] [sim:cancellable] [sim:video-kib=64] [sim:bogus=1]',
    );
    expect(m).toEqual({
      fail: true,
      reject: true,
      filtered: true,
      drop: 2,
      submit429: 3,
      submit5xx: 4,
      dropAfterCreate: 5,
      poll429: 6,
      poll5xx: 7,
      content5xx: 8,
      slowMs: 90,
      jobMs: 1234,
      cancellable: true,
      videoKib: 64,
    });
    expect(parseMarkers('no markers here')).toMatchObject({ fail: false, drop: 0, jobMs: null, cancellable: false });
    expect(parseMarkers('[sim:ms=0]').jobMs).toBe(0);
  });

  it('makes a video of the size asked, still an MP4, at most 64 MiB', () => {
    expect(sampleVideo(0)).toBe(SAMPLE_MP4);
    const big = sampleVideo(64);
    expect(big.length).toBe(64 * 1024);
    expect(looksLikeMp4(big)).toBe(true);
    expect(big.subarray(0, SAMPLE_MP4.length)).toEqual(SAMPLE_MP4);
    // The padding is one box that players skip: its size covers the rest of the file.
    expect(big.readUInt32BE(SAMPLE_MP4.length)).toBe(big.length - SAMPLE_MP4.length);
    expect(big.toString('latin1', SAMPLE_MP4.length + 4, SAMPLE_MP4.length + 8)).toBe('free');
    expect(parseMarkers('[sim:video-kib=999999]').videoKib).toBe(MAX_VIDEO_KIB);
  });

  it('chains submit faults in a fixed order and alternates 500/503', () => {
    const m = parseMarkers('[sim:drop=1][sim:submit-429=1][sim:submit-5xx=2][sim:drop-after-create=1]');
    expect([1, 2, 3, 4, 5, 6].map((n) => submitFault(m, n))).toEqual(['drop', 'submit-429', 'submit-500', 'submit-503', 'drop-after-create', null]);
    expect([1, 2, 3].map((n) => pollFault(1, 1, n))).toEqual(['poll-429', 'poll-5xx', null]);
  });

  it('counts attempts per route and exact text', () => {
    const c = new AttemptCounters();
    expect([c.next('a', 'x'), c.next('a', 'x'), c.next('b', 'x'), c.next('a', 'y')]).toEqual([1, 2, 1, 1]);
    c.reset();
    expect(c.next('a', 'x')).toBe(1);
  });

  it('draws random faults with the given rate', () => {
    expect(randomFault(0, () => 0)).toBeNull();
    expect(randomFault(0.5, () => 0.6)).toBeNull();
    const draws = [0.1, 0.0, 0.1, 0.3, 0.1, 0.6, 0.1, 0.9];
    const rng = () => draws.shift() ?? 0;
    expect([randomFault(0.5, rng), randomFault(0.5, rng), randomFault(0.5, rng), randomFault(0.5, rng)]).toEqual([
      'random-429',
      'random-500',
      'random-503',
      'random-drop',
    ]);
  });
});

describe('outcome markers', () => {
  it('[sim:fail] ends an OpenAI video failed with generation_failed', async () => {
    const v = (await (await createVideo(uniq('[sim:fail] [sim:ms=30]'))).json()) as Video;
    expect(v.status).toBe('queued');
    await sleep(50);
    const done = (await (await getVideo(v.id)).json()) as Video;
    expect(done.status).toBe('failed');
    expect(done.error?.code).toBe('generation_failed');
    expect(done.error?.message.length).toBeGreaterThan(5);
    expect(done.completed_at).not.toBeNull();
    expect(done.expires_at).toBeNull();
    expect(done.progress).toBeLessThan(100);
    const content = await fetch(`${sim.url}/v1/videos/${v.id}/content`, { headers: AUTH });
    expect(content.status).toBe(404);
    const meta = (await (await fetch(`${sim.url}/_sim/jobs/${v.id}`)).json()) as { status: string; completedAt: number };
    expect(meta.status).toBe('failed');
    expect(meta.completedAt).toBeGreaterThan(0);
  });

  it('[sim:fail] ends a Veo operation with error code 13', async () => {
    const { name } = (await (await createOp(uniq('[sim:fail][sim:ms=30]'))).json()) as Operation;
    await sleep(50);
    const done = (await (await getOp(name)).json()) as Operation;
    expect(done).toMatchObject({ name, done: true, error: { code: 13 } });
    expect(done.response).toBeUndefined();
  });

  it('[sim:filtered] completes a Veo operation with RAI-filtered media and no samples', async () => {
    const { name } = (await (await createOp(uniq('[sim:filtered][sim:ms=30]'))).json()) as Operation;
    await sleep(50);
    const done = (await (await getOp(name)).json()) as Operation;
    expect(done.done).toBe(true);
    expect(done.error).toBeUndefined();
    const gvr = done.response?.generateVideoResponse;
    expect(gvr?.raiMediaFilteredCount).toBe(1);
    expect(gvr?.raiMediaFilteredReasons).toHaveLength(1);
    expect(gvr?.generatedSamples).toBeUndefined();
  });

  it('[sim:filtered] fails an OpenAI video', async () => {
    const v = (await (await createVideo(uniq('[sim:filtered][sim:ms=20]'))).json()) as Video;
    await sleep(40);
    expect(((await (await getVideo(v.id)).json()) as Video).status).toBe('failed');
  });

  it('[sim:reject] answers 400 content policy and creates nothing', async () => {
    const before = await stats();
    const o = await createVideo(uniq('[sim:reject]'));
    expect(o.status).toBe(400);
    expect(await errorCode(o)).toBe('content_policy_violation');
    const g = await createOp(uniq('[sim:reject]'));
    expect(g.status).toBe(400);
    expect(await googleStatus(g)).toBe('INVALID_ARGUMENT');
    const after = await stats();
    expect(after.jobsCreated).toEqual(before.jobsCreated);
    expect(after.faults.reject).toBe((before.faults.reject ?? 0) + 2);
  });

  it('[sim:ms=MS] overrides jobMs per job', async () => {
    const fast = (await (await createVideo(uniq('[sim:ms=10]'))).json()) as Video;
    const slow = (await (await createVideo(uniq('[sim:ms=3000]'))).json()) as Video;
    await sleep(30);
    expect(((await (await getVideo(fast.id)).json()) as Video).status).toBe('completed');
    expect(((await (await getVideo(slow.id)).json()) as Video).status).not.toBe('completed');
    const meta = (await (await fetch(`${sim.url}/_sim/jobs/${slow.id}`)).json()) as { durationMs: number; completedAt: number | null };
    expect(meta).toMatchObject({ durationMs: 3000, completedAt: null });
  });

  it('[sim:slow=MS] delays the create answer, but the job exists meanwhile', async () => {
    const before = await stats();
    const t0 = Date.now();
    const pending = createVideo(uniq('[sim:slow=250]'));
    await sleep(100);
    const mid = await stats();
    expect(mid.jobsCreated.openai).toBe(before.jobsCreated.openai + 1);
    const res = await pending;
    expect(Date.now() - t0).toBeGreaterThanOrEqual(240);
    expect(res.status).toBe(200);
    const v = (await res.json()) as Video;
    expect((await fetch(`${sim.url}/_sim/jobs/${v.id}`)).status).toBe(200);
    expect(mid.faults.slow).toBeGreaterThanOrEqual(1);
    const t1 = Date.now();
    expect((await createOp(uniq('[sim:slow=150]'))).status).toBe(200);
    expect(Date.now() - t1).toBeGreaterThanOrEqual(140);
  });
});

describe('submit markers', () => {
  it('[sim:submit-5xx=N] alternates 500/503 for N attempts, creating nothing, on both protocols', async () => {
    const before = await stats();
    const p = uniq('[sim:submit-5xx=3]');
    const codes = [];
    for (let i = 0; i < 4; i += 1) codes.push((await createVideo(p)).status);
    expect(codes).toEqual([500, 503, 500, 200]);
    const g = uniq('[sim:submit-5xx=2]');
    const r1 = await createOp(g);
    expect([r1.status, await googleStatus(r1)]).toEqual([500, 'INTERNAL']);
    const r2 = await createOp(g);
    expect([r2.status, await googleStatus(r2)]).toEqual([503, 'UNAVAILABLE']);
    expect((await createOp(g)).status).toBe(200);
    const after = await stats();
    expect(after.jobsCreated.openai - before.jobsCreated.openai).toBe(1);
    expect(after.jobsCreated.veo - before.jobsCreated.veo).toBe(1);
    expect((after.faults['submit-5xx'] ?? 0) - (before.faults['submit-5xx'] ?? 0)).toBe(5);
  });

  it('counters are independent per prompt', async () => {
    const a = uniq('[sim:submit-5xx=1]');
    const b = uniq('[sim:submit-5xx=1]');
    expect((await createVideo(a)).status).toBe(500);
    expect((await createVideo(b)).status).toBe(500);
    expect((await createVideo(a)).status).toBe(200);
    // The same text on another route has its own counter.
    expect((await createOp(a)).status).toBe(500);
  });

  it('[sim:submit-429=N] answers 429 with retry-after in each protocol shape', async () => {
    const p = uniq('[sim:submit-429=2]');
    for (let i = 0; i < 2; i += 1) {
      const res = await createVideo(p);
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(await errorCode(res)).toBe('rate_limit_exceeded');
    }
    expect((await createVideo(p)).status).toBe(200);
    const g = uniq('[sim:submit-429=1]');
    const res = await createOp(g);
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await googleStatus(res)).toBe('RESOURCE_EXHAUSTED');
    expect((await createOp(g)).status).toBe(200);
  });

  it('[sim:drop=N] destroys the connection without creating a job', async () => {
    const before = await stats();
    const p = uniq('[sim:drop=2]');
    await expect(createVideo(p)).rejects.toThrow();
    await expect(createVideo(p, { 'idempotency-key': 'drop-key' })).rejects.toThrow();
    const ok = await createVideo(p, { 'idempotency-key': 'drop-key' });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('idempotent-replayed')).toBeNull(); // nothing was recorded by the drops
    const g = uniq('[sim:drop=1]');
    await expect(createOp(g)).rejects.toThrow();
    expect((await createOp(g)).status).toBe(200);
    const after = await stats();
    expect(after.jobsCreated.openai - before.jobsCreated.openai).toBe(1);
    expect(after.jobsCreated.veo - before.jobsCreated.veo).toBe(1);
    expect((after.faults.drop ?? 0) - (before.faults.drop ?? 0)).toBe(3);
  });

  it('[sim:drop-after-create=N] creates the job, drops, and an Idempotency-Key retry gets it back (OpenAI)', async () => {
    const before = await stats();
    const p = uniq('[sim:drop-after-create=1]');
    await expect(createVideo(p, { 'idempotency-key': 'dac-openai' })).rejects.toThrow();
    const mid = await stats();
    expect(mid.jobsCreated.openai - before.jobsCreated.openai).toBe(1);
    const retry = await createVideo(p, { 'idempotency-key': 'dac-openai' });
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    const v = (await retry.json()) as Video;
    const meta = (await (await fetch(`${sim.url}/_sim/jobs/${v.id}`)).json()) as { idempotencyKey: string; prompt: string };
    expect(meta).toMatchObject({ idempotencyKey: 'dac-openai', prompt: p });
    const after = await stats();
    expect(after.jobsCreated.openai - before.jobsCreated.openai).toBe(1);
  });

  it('[sim:drop-after-create=N] without a key creates a job per attempt (Veo)', async () => {
    const before = await stats();
    const p = uniq('[sim:drop-after-create=2]');
    await expect(createOp(p)).rejects.toThrow();
    await expect(createOp(p)).rejects.toThrow();
    expect((await createOp(p)).status).toBe(200);
    expect((await stats()).jobsCreated.veo - before.jobsCreated.veo).toBe(3);

    const k = uniq('[sim:drop-after-create=1]');
    await expect(createOp(k, { 'idempotency-key': 'dac-veo' })).rejects.toThrow();
    const retry = await createOp(k, { 'idempotency-key': 'dac-veo' });
    const { name } = (await retry.json()) as Operation;
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    const meta = (await (await fetch(`${sim.url}/_sim/jobs/${name.split('/').pop() ?? ''}`)).json()) as { idempotencyKey: string; flavor: string };
    expect(meta).toMatchObject({ idempotencyKey: 'dac-veo', flavor: 'veo' });
    expect((await stats()).jobsCreated.veo - before.jobsCreated.veo).toBe(4);
  });

  it('markers chain: drop, then 429, then success', async () => {
    const p = uniq('[sim:drop=1][sim:submit-429=1]');
    await expect(createVideo(p)).rejects.toThrow();
    expect((await createVideo(p)).status).toBe(429);
    expect((await createVideo(p)).status).toBe(200);
  });

  it('remix reads markers from the remix prompt', async () => {
    const src = (await (await createVideo(uniq('remix src [sim:ms=10]'))).json()) as Video;
    await sleep(30);
    const remixPrompt = uniq('[sim:submit-429=1][sim:fail][sim:ms=10]');
    const remix = () => fetch(`${sim.url}/v1/videos/${src.id}/remix`, { method: 'POST', headers: AUTH, body: JSON.stringify({ prompt: remixPrompt }) });
    expect((await remix()).status).toBe(429);
    const ok = await remix();
    expect(ok.status).toBe(200);
    const r = (await ok.json()) as Video;
    await sleep(30);
    expect(((await (await getVideo(r.id)).json()) as Video).status).toBe('failed');
    const rejected = await fetch(`${sim.url}/v1/videos/${src.id}/remix`, { method: 'POST', headers: AUTH, body: JSON.stringify({ prompt: '[sim:reject]' }) });
    expect(rejected.status).toBe(400);
    expect(await errorCode(rejected)).toBe('content_policy_violation');
  });

  it('characters read markers from the name', async () => {
    const form = (name: string) => {
      const f = new FormData();
      f.append('name', name);
      f.append('video', new Blob([SAMPLE_MP4], { type: 'video/mp4' }), 'c.mp4');
      return f;
    };
    const post = (name: string) =>
      fetch(`${sim.url}/v1/videos/characters`, { method: 'POST', headers: { authorization: AUTH.authorization }, body: form(name) });
    const name = `Bob [sim:submit-5xx=1] ${(seq += 1)}`;
    expect((await post(name)).status).toBe(500);
    expect((await post(name)).status).toBe(200);
    expect((await post(`Eve [sim:reject] ${(seq += 1)}`)).status).toBe(400);
    await expect(post(`Al [sim:drop=1] ${(seq += 1)}`)).rejects.toThrow();
  });
});

describe('poll and content markers', () => {
  it('[sim:poll-5xx=N] and [sim:poll-429=N] fail the first status reads (OpenAI)', async () => {
    const v = (await (await createVideo(uniq('[sim:poll-429=1][sim:poll-5xx=2]'))).json()) as Video;
    const first = await getVideo(v.id);
    expect(first.status).toBe(429);
    expect(first.headers.get('retry-after')).toBe('1');
    expect(await errorCode(first)).toBe('rate_limit_exceeded');
    expect((await getVideo(v.id)).status).toBe(503);
    expect((await getVideo(v.id)).status).toBe(503);
    expect((await getVideo(v.id)).status).toBe(200);
    expect((await getVideo(v.id)).status).toBe(200);
  });

  it('[sim:poll-5xx=N] and [sim:poll-429=N] fail the first operation reads (Veo)', async () => {
    const { name } = (await (await createOp(uniq('[sim:poll-5xx=1][sim:poll-429=1]'))).json()) as Operation;
    const a = await getOp(name);
    expect([a.status, await googleStatus(a)]).toEqual([429, 'RESOURCE_EXHAUSTED']);
    const b = await getOp(name);
    expect([b.status, await googleStatus(b)]).toEqual([503, 'UNAVAILABLE']);
    expect((await getOp(name)).status).toBe(200);
  });

  it('[sim:content-5xx=N] fails the first content downloads (OpenAI)', async () => {
    const v = (await (await createVideo(uniq('[sim:content-5xx=2][sim:ms=10]'))).json()) as Video;
    await sleep(30);
    const url = `${sim.url}/v1/videos/${v.id}/content`;
    expect((await fetch(url, { headers: AUTH })).status).toBe(503);
    expect((await fetch(url, { headers: AUTH })).status).toBe(503);
    const ok = await fetch(url, { headers: AUTH });
    expect(ok.status).toBe(200);
    expect((await ok.arrayBuffer()).byteLength).toBe(SAMPLE_MP4.length);
  });

  it('[sim:content-5xx=N] fails the first file downloads (Veo)', async () => {
    const { name } = (await (await createOp(uniq('[sim:content-5xx=1][sim:ms=10]'))).json()) as Operation;
    await sleep(30);
    const uri = ((await (await getOp(name)).json()) as Operation).response?.generateVideoResponse.generatedSamples?.[0]?.video.uri ?? '';
    const first = await fetch(uri, { headers: GKEY });
    expect([first.status, await googleStatus(first)]).toEqual([503, 'UNAVAILABLE']);
    const second = await fetch(uri, { headers: GKEY });
    expect(second.status).toBe(200);
    expect((await second.arrayBuffer()).byteLength).toBe(SAMPLE_MP4.length);
  });
});

describe('random faults (faultRate)', () => {
  it('with faultRate=1 every upstream request faults with all four kinds, /_sim never does, and creates make nothing', async () => {
    const chaos = await startSimulator({ jobMs: 50, faultRate: 1 });
    try {
      const seen = new Map<string, number>();
      for (let i = 0; i < 60; i += 1) {
        const kind = await fetch(`${chaos.url}/v1/videos`, { method: 'POST', headers: AUTH, body: '{"prompt":"x"}' }).then(
          (r) => {
            void r.arrayBuffer();
            return String(r.status);
          },
          () => 'drop',
        );
        seen.set(kind, (seen.get(kind) ?? 0) + 1);
      }
      expect([...seen.keys()].sort()).toEqual(['429', '500', '503', 'drop']);
      for (let i = 0; i < 5; i += 1) expect((await fetch(`${chaos.url}/_sim/health`)).status).toBe(200);
      const s = (await (await fetch(`${chaos.url}/_sim/stats`)).json()) as Stats;
      expect(s.jobsCreated).toEqual({ veo: 0, openai: 0 });
      const randomTotal = ['random-429', 'random-500', 'random-503', 'random-drop'].reduce((n, k) => n + (s.faults[k] ?? 0), 0);
      expect(randomTotal).toBe(60);
      expect(s.faults['random-drop']).toBe(seen.get('drop'));
    } finally {
      await chaos.close();
    }
  });

  it('with a fractional faultRate some requests succeed and some fault', async () => {
    const flaky = await startSimulator({ jobMs: 50, faultRate: 0.5 });
    try {
      let ok = 0;
      let bad = 0;
      for (let i = 0; i < 80; i += 1) {
        const status = await fetch(`${flaky.url}/v1/videos?limit=1`, { headers: AUTH }).then(
          (r) => {
            void r.arrayBuffer();
            return r.status;
          },
          () => 0,
        );
        if (status === 200) ok += 1;
        else bad += 1;
      }
      expect(ok).toBeGreaterThan(10);
      expect(bad).toBeGreaterThan(10);
    } finally {
      await flaky.close();
    }
  });
});
