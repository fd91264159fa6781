import { fromVeoOperation, toVeoRequest } from '../../src/providers/gemini-veo/mapping';
import { fromOpenAiVideo, fromOpenAiVideoPage, toVideoForm } from '../../src/providers/openai-videos/mapping';
import type { SubmitInput } from '../../src/providers/video-upstream';

const png = { mimeType: 'image/png', bytes: Buffer.from('png-bytes') };
const jpg = { mimeType: 'image/jpeg', bytes: Buffer.from('jpg-bytes') };
const input = (over: Partial<SubmitInput> = {}): SubmitInput => ({
  taskId: 't',
  upstreamModel: 'veo-3.0-generate-001',
  prompt: 'p',
  images: [],
  imageRole: 'first-frame',
  enableUpsample: false,
  watermark: true,
  private: false,
  characterIds: [],
  ...over,
});

describe('Veo request', () => {
  test('prompt only, no parameters', () => {
    expect(toVeoRequest(input())).toEqual({ instances: [{ prompt: 'p' }], parameters: {} });
  });
  test('first frame, aspect ratio, 1080p when upsampling', () => {
    const req = toVeoRequest(input({ images: [png], aspectRatio: '9:16', enableUpsample: true }));
    expect(req.instances[0].image).toEqual({ bytesBase64Encoded: png.bytes.toString('base64'), mimeType: 'image/png' });
    expect(req.parameters).toEqual({ aspectRatio: '9:16', resolution: '1080p' });
  });
  test('Veo 2 has no resolution parameter', () => {
    expect(toVeoRequest(input({ upstreamModel: 'veo-2.0-generate-001', enableUpsample: true })).parameters).toEqual({});
  });
  test('first and last frame', () => {
    const req = toVeoRequest(input({ images: [png, jpg], imageRole: 'first-last-frame' }));
    expect(req.instances[0].image?.mimeType).toBe('image/png');
    expect(req.instances[0].lastFrame?.mimeType).toBe('image/jpeg');
  });
  test('components become reference images', () => {
    const req = toVeoRequest(input({ images: [png, jpg, png], imageRole: 'components' }));
    expect(req.instances[0].image).toBeUndefined();
    expect(req.instances[0].referenceImages?.map((r) => r.referenceType)).toEqual(['asset', 'asset', 'asset']);
  });
});

describe('Veo operation', () => {
  test('running', () => expect(fromVeoOperation({ name: 'op' })).toEqual({ phase: 'running', progress: null }));
  test('done with a sample', () => {
    expect(
      fromVeoOperation({ name: 'op', done: true, response: { generateVideoResponse: { generatedSamples: [{ video: { uri: 'https://x/f' } }] } } }),
    ).toEqual({ phase: 'succeeded', download: { url: 'https://x/f' } });
  });
  test('done with an error', () => {
    const r = fromVeoOperation({ name: 'op', done: true, error: { code: 13, message: 'internal' } });
    expect(r).toEqual({ phase: 'failed', error: { code: 'upstream_failed', message: 'internal' } });
  });
  test('filtered', () => {
    const r = fromVeoOperation({
      name: 'op',
      done: true,
      response: { generateVideoResponse: { raiMediaFilteredCount: 1, raiMediaFilteredReasons: ['unsafe'] } },
    });
    expect(r).toEqual({ phase: 'failed', error: { code: 'content_filtered', message: 'unsafe' } });
  });
  test('done without anything', () => {
    expect(fromVeoOperation({ name: 'op', done: true }).phase).toBe('failed');
  });
});

describe('OpenAI videos', () => {
  test('form fields, with and without the extensions', () => {
    const form = toVideoForm(input({ upstreamModel: 'sora-2', seconds: 10, size: '720x1280', images: [png], characterIds: ['char_1'] }), true);
    expect(form.get('model')).toBe('sora-2');
    expect(form.get('seconds')).toBe('10');
    expect(form.get('size')).toBe('720x1280');
    expect(form.get('input_reference')).toBeInstanceOf(Blob);
    expect(form.get('watermark')).toBe('true');
    expect(form.getAll('characters[]')).toEqual(['char_1']);
    const plain = toVideoForm(input({ upstreamModel: 'sora-2' }), false);
    expect(plain.has('watermark')).toBe(false);
    expect(plain.has('input_reference')).toBe(false);
  });
  test.each([
    [
      { id: 'v', status: 'queued' as const, progress: 0 },
      { phase: 'queued', progress: 0 },
    ],
    [
      { id: 'v', status: 'in_progress' as const, progress: 42 },
      { phase: 'running', progress: 42 },
    ],
    [
      { id: 'v', status: 'completed' as const, progress: 100 },
      { phase: 'succeeded', download: { url: 'C' } },
    ],
    [
      { id: 'v', status: 'failed' as const, error: { code: 'content_policy_violation', message: 'no' } },
      { phase: 'failed', error: { code: 'content_filtered', message: 'no' } },
    ],
    [
      { id: 'v', status: 'failed' as const, error: null },
      { phase: 'failed', error: { code: 'upstream_failed', message: 'the provider reported the job failed' } },
    ],
  ])('%j', (video, expected) => {
    expect(fromOpenAiVideo(video, 'C')).toEqual(expected);
  });
});

describe('OpenAI videos list page -> jobs and the next cursor', () => {
  const url = (id: string) => `https://u.test/v1/videos/${id}/content`;

  test('each entry read on its own: one the gateway cannot read is left out, not the page', () => {
    const page = fromOpenAiVideoPage(
      {
        data: [
          { id: 'a', object: 'video', status: 'in_progress', progress: 40 },
          { id: 'b', status: 'teleporting' },
          { id: 'c', status: 'completed', progress: 100 },
        ],
        has_more: true,
        last_id: 'c',
      },
      url,
    );
    expect(page).toEqual({
      jobs: [
        { id: 'a', result: { phase: 'running', progress: 40 } },
        { id: 'c', result: { phase: 'succeeded', download: { url: url('c') } } },
      ],
      next: 'c',
    });
  });

  test('the last page has no cursor; a page without last_id continues from its last entry', () => {
    expect(fromOpenAiVideoPage({ data: [{ id: 'a', status: 'queued' }], has_more: false, last_id: 'a' }, url).next).toBeNull();
    expect(fromOpenAiVideoPage({ data: [{ id: 'a', status: 'queued' }], has_more: true }, url).next).toBe('a');
    expect(fromOpenAiVideoPage({ data: [], has_more: true, last_id: null }, url).next).toBeNull();
  });
});
