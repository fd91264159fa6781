import { startSimulator, type RunningSimulator } from '../../simulator/server';
import { SAMPLE_MP4 } from '../../simulator/assets';

interface GoogleError {
  error: { code: number; message: string; status: string };
}
interface Operation {
  name: string;
  done?: boolean;
  error?: { code: number; message: string };
  response?: {
    '@type'?: string;
    generateVideoResponse: {
      generatedSamples?: Array<{ video: { uri: string } }>;
      raiMediaFilteredCount?: number;
      raiMediaFilteredReasons?: string[];
    };
  };
}

const KEY = { 'x-goog-api-key': 'AIza-test' };
const JSON_KEY = { ...KEY, 'content-type': 'application/json' };
const MODEL = 'veo-3.1-generate-preview';
const PNG_1PX = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const JPEG_HEAD = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await startSimulator({ jobMs: 300 });
});
afterAll(async () => {
  await sim.close();
});

function predict(body: unknown, model = MODEL, headers: Record<string, string> = JSON_KEY): Promise<Response> {
  return fetch(`${sim.url}/v1beta/models/${model}:predictLongRunning`, { method: 'POST', headers, body: JSON.stringify(body) });
}
async function startOp(prompt: string, parameters?: Record<string, unknown>): Promise<string> {
  const res = await predict({ instances: [{ prompt }], ...(parameters ? { parameters } : {}) });
  expect(res.status).toBe(200);
  return ((await res.json()) as Operation).name;
}
async function poll(name: string): Promise<Response> {
  return fetch(`${sim.url}/v1beta/${name}`, { headers: KEY });
}
async function op(name: string): Promise<Operation> {
  return (await (await poll(name)).json()) as Operation;
}
async function gErr(res: Response): Promise<GoogleError['error']> {
  return ((await res.json()) as GoogleError).error;
}

describe('predictLongRunning', () => {
  it('returns an operation name and polls to a downloadable sample', async () => {
    const res = await predict({
      // Long enough that the first poll finds it running on a loaded machine.
      instances: [{ prompt: 'a lighthouse at dusk [sim:ms=1500]' }],
      parameters: {
        aspectRatio: '9:16',
        durationSeconds: 8,
        resolution: '1080p',
        enhancePrompt: true,
        negativePrompt: 'blur',
        personGeneration: 'allow_adult',
      },
    });
    expect(res.status).toBe(200);
    const created = (await res.json()) as Operation;
    expect(Object.keys(created)).toEqual(['name']);
    expect(created.name).toMatch(new RegExp(`^models/${MODEL.replace(/\./g, '\\.')}/operations/[0-9a-z]{31}$`));

    const running = await op(created.name);
    expect(running).toEqual({ name: created.name, done: false }); // no invented progress field
    let done = running;
    for (const deadline = Date.now() + 10_000; !done.done && Date.now() < deadline;) {
      await sleep(100);
      done = await op(created.name);
    }
    expect(done.done).toBe(true);
    expect(done.error).toBeUndefined();
    expect(done.response?.['@type']).toBe('type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse');
    const samples = done.response?.generateVideoResponse.generatedSamples ?? [];
    expect(samples).toHaveLength(1);
    const uri = samples[0]!.video.uri;
    expect(uri).toMatch(new RegExp(`^${sim.url}/v1beta/files/[^/]+:download\\?alt=media$`));

    // With the key: 302 to a signed blob URL; fetch follows it and gets the MP4.
    const redirect = await fetch(uri, { headers: KEY, redirect: 'manual' });
    expect(redirect.status).toBe(302);
    const location = redirect.headers.get('location') ?? '';
    expect(location).toMatch(new RegExp(`^${sim.url}/_sim/blobs/[^/]+\\.mp4\\?sig=`));
    const followed = await fetch(uri, { headers: KEY });
    expect(followed.status).toBe(200);
    expect(followed.headers.get('content-type')).toBe('video/mp4');
    expect(followed.headers.get('content-length')).toBe(String(SAMPLE_MP4.length));
    expect(Buffer.from(await followed.arrayBuffer()).equals(SAMPLE_MP4)).toBe(true);

    // Without the key: 403 in Google's shape.
    const noKey = await fetch(uri, { redirect: 'manual' });
    expect(noKey.status).toBe(403);
    expect((await gErr(noKey)).status).toBe('PERMISSION_DENIED');

    // The blob honours one Range and refuses unsatisfiable ones; a forged signature is refused.
    const part = await fetch(location, { headers: { range: 'bytes=0-7' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 0-7/${SAMPLE_MP4.length}`);
    expect(Buffer.from(await part.arrayBuffer()).equals(SAMPLE_MP4.subarray(0, 8))).toBe(true);
    const tail = await fetch(location, { headers: { range: 'bytes=-4' } });
    expect(tail.status).toBe(206);
    expect(Buffer.from(await tail.arrayBuffer()).equals(SAMPLE_MP4.subarray(SAMPLE_MP4.length - 4))).toBe(true);
    const beyond = await fetch(location, { headers: { range: `bytes=${SAMPLE_MP4.length}-` } });
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get('content-range')).toBe(`bytes */${SAMPLE_MP4.length}`);
    await beyond.arrayBuffer();
    const forged = await fetch(location.replace(/sig=.*/, 'sig=forged'));
    expect(forged.status).toBe(403);
    await forged.arrayBuffer();
  });

  it('returns one sample per sampleCount, each downloadable', async () => {
    const name = await startOp('two samples [sim:ms=20]', { sampleCount: 2 });
    await sleep(40);
    const samples = (await op(name)).response?.generateVideoResponse.generatedSamples ?? [];
    expect(samples).toHaveLength(2);
    expect(samples[0]!.video.uri).not.toBe(samples[1]!.video.uri);
    for (const s of samples) {
      const res = await fetch(s.video.uri, { headers: KEY });
      expect(res.status).toBe(200);
      expect((await res.arrayBuffer()).byteLength).toBe(SAMPLE_MP4.length);
    }
  });

  it('accepts images in both encodings, including 3 reference images', async () => {
    const b64 = PNG_1PX.toString('base64');
    const res = await predict({
      instances: [
        {
          prompt: 'with images',
          image: { bytesBase64Encoded: b64, mimeType: 'image/png' },
          lastFrame: { inlineData: { mimeType: 'image/jpeg', data: JPEG_HEAD.toString('base64') } },
          referenceImages: [
            { image: { bytesBase64Encoded: b64, mimeType: 'image/png' }, referenceType: 'asset' },
            { image: { inlineData: { mimeType: 'image/png', data: b64 } }, referenceType: 'style' },
            { image: { bytesBase64Encoded: b64 }, referenceType: 'asset' },
          ],
        },
      ],
    });
    expect(res.status).toBe(200);
    const { name } = (await res.json()) as Operation;
    const meta = (await (await fetch(`${sim.url}/_sim/jobs/${name.split('/').pop() ?? ''}`)).json()) as { params: Record<string, unknown> };
    expect(meta.params).toEqual({ image: 'image/png', lastFrame: 'image/jpeg', referenceImages: ['asset', 'style', 'asset'] });
  });

  it('records the parameters it received', async () => {
    const name = await startOp('params', { aspectRatio: '9:16', durationSeconds: '6', resolution: '1080p' });
    const meta = (await (await fetch(`${sim.url}/_sim/jobs/${name.split('/').pop() ?? ''}`)).json()) as { params: Record<string, unknown> };
    expect(meta.params).toEqual({ aspectRatio: '9:16', durationSeconds: 6, resolution: '1080p', image: null, lastFrame: null, referenceImages: [] });
  });

  it.each([
    ['a missing prompt', { instances: [{}] }],
    ['an empty prompt', { instances: [{ prompt: '' }] }],
    ['no instances', { instances: [] }],
    ['a bad aspectRatio', { instances: [{ prompt: 'p' }], parameters: { aspectRatio: '4:3' } }],
    ['a bad durationSeconds', { instances: [{ prompt: 'p' }], parameters: { durationSeconds: 30 } }],
    ['an unknown parameter', { instances: [{ prompt: 'p' }], parameters: { generateAudio: true } }],
    [
      '4 reference images',
      {
        instances: [{ prompt: 'p', referenceImages: Array.from({ length: 4 }, () => ({ image: { bytesBase64Encoded: PNG_1PX.toString('base64') } })) }],
      },
    ],
    [
      'image bytes that are not an image',
      { instances: [{ prompt: 'p', image: { bytesBase64Encoded: Buffer.from('not an image at all').toString('base64'), mimeType: 'image/png' } }] },
    ],
    [
      'inlineData that is not an image',
      { instances: [{ prompt: 'p', lastFrame: { inlineData: { mimeType: 'image/png', data: Buffer.from('GIF88zz').toString('base64') } } }] },
    ],
  ])('answers 400 INVALID_ARGUMENT for %s', async (_label, body) => {
    const res = await predict(body);
    expect(res.status).toBe(400);
    const err = await gErr(res);
    expect(err.code).toBe(400);
    expect(err.status).toBe('INVALID_ARGUMENT');
    expect(err.message.length).toBeGreaterThan(10);
  });

  it('names the offending field for too many reference images and unknown fields', async () => {
    const many = await predict({
      instances: [{ prompt: 'p', referenceImages: Array.from({ length: 4 }, () => ({ image: { bytesBase64Encoded: PNG_1PX.toString('base64') } })) }],
    });
    expect((await gErr(many)).message).toMatch(/referenceImages/);
    const unknown = await predict({ instances: [{ prompt: 'p' }], parameters: { generateAudio: true } });
    expect((await gErr(unknown)).message).toMatch(/Unknown name "generateAudio"/);
  });

  it('rejects non-JSON and malformed JSON bodies', async () => {
    const form = await fetch(`${sim.url}/v1beta/models/${MODEL}:predictLongRunning`, {
      method: 'POST',
      headers: { ...KEY, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'a=b',
    });
    expect(form.status).toBe(400);
    expect((await gErr(form)).status).toBe('INVALID_ARGUMENT');
    const broken = await fetch(`${sim.url}/v1beta/models/${MODEL}:predictLongRunning`, { method: 'POST', headers: JSON_KEY, body: '{"instances": [' });
    expect(broken.status).toBe(400);
    expect((await gErr(broken)).status).toBe('INVALID_ARGUMENT');
  });

  it('404s models that are not veo-*', async () => {
    const res = await predict({ instances: [{ prompt: 'p' }] }, 'imagen-4.0-generate-001');
    expect(res.status).toBe(404);
    expect(await gErr(res)).toMatchObject({ code: 404, status: 'NOT_FOUND' });
    expect((await predict({ instances: [{ prompt: 'p' }] }, 'veo-2.0-generate-001')).status).toBe(200);
  });

  it('requires an API key (header or ?key=) and checks it when configured', async () => {
    const missing = await predict({ instances: [{ prompt: 'p' }] }, MODEL, { 'content-type': 'application/json' });
    expect(missing.status).toBe(403);
    expect(await gErr(missing)).toMatchObject({ code: 403, status: 'PERMISSION_DENIED' });
    const viaQuery = await fetch(`${sim.url}/v1beta/models/${MODEL}:predictLongRunning?key=abc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"instances":[{"prompt":"q"}]}',
    });
    expect(viaQuery.status).toBe(200);

    const locked = await startSimulator({ jobMs: 50, apiKey: 'right-key' });
    try {
      const wrong = await fetch(`${locked.url}/v1beta/models/${MODEL}:predictLongRunning`, {
        method: 'POST',
        headers: { 'x-goog-api-key': 'wrong', 'content-type': 'application/json' },
        body: '{"instances":[{"prompt":"q"}]}',
      });
      expect(wrong.status).toBe(403);
      const right = await fetch(`${locked.url}/v1beta/models/${MODEL}:predictLongRunning`, {
        method: 'POST',
        headers: { 'x-goog-api-key': 'right-key', 'content-type': 'application/json' },
        body: '{"instances":[{"prompt":"q"}]}',
      });
      expect(right.status).toBe(200);
      const openaiWrong = await fetch(`${locked.url}/v1/videos`, {
        method: 'POST',
        headers: { authorization: 'Bearer wrong', 'content-type': 'application/json' },
        body: '{"prompt":"q"}',
      });
      expect(openaiWrong.status).toBe(401);
      expect(((await openaiWrong.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
      const openaiRight = await fetch(`${locked.url}/v1/videos`, {
        method: 'POST',
        headers: { authorization: 'Bearer right-key', 'content-type': 'application/json' },
        body: '{"prompt":"q"}',
      });
      expect(openaiRight.status).toBe(200);
    } finally {
      await locked.close();
    }
  });
});

describe('operations and files', () => {
  it('404s unknown operations, wrong models and unknown files', async () => {
    const unknown = await poll(`models/${MODEL}/operations/0123456789abcdef`);
    expect(unknown.status).toBe(404);
    expect(await gErr(unknown)).toMatchObject({ code: 404, status: 'NOT_FOUND' });
    const name = await startOp('model mismatch');
    const wrongModel = await poll(name.replace(MODEL, 'veo-2.0-generate-001'));
    expect(wrongModel.status).toBe(404);
    const file = await fetch(`${sim.url}/v1beta/files/nope-0:download?alt=media`, { headers: KEY });
    expect(file.status).toBe(404);
    expect((await gErr(file)).status).toBe('NOT_FOUND');
  });

  it('exposes no file before the operation is done', async () => {
    const name = await startOp('slow one [sim:ms=5000]');
    const opId = name.split('/').pop() ?? '';
    const early = await fetch(`${sim.url}/v1beta/files/${opId}-0:download?alt=media`, { headers: KEY });
    expect(early.status).toBe(404);
    await early.arrayBuffer();
  });
});
