/** Ids that carry a job's state (simulator/job-ids.ts): every field round-trips, made-up ids do not decode. */
import { randomBytes } from 'node:crypto';
import {
  characterId,
  MAX_ID_DURATION_MS,
  modelHash,
  openAiVideoId,
  readCharacterId,
  readOpenAiVideoId,
  readVeoOperationId,
  veoOperationId,
} from '../../simulator/job-ids';

const NOW = Date.UTC(2026, 0, 2, 3, 4, 5, 678);

test('an OpenAI-style video id carries its timeline, outcome, model, seconds and size', () => {
  for (const outcome of ['success', 'fail', 'filtered'] as const) {
    for (let model = 0; model < 2; model++) {
      for (let seconds = 0; seconds < 6; seconds++) {
        const facts = { createdAt: NOW + seconds, durationMs: 86_400_000 - model, outcome, model, seconds, size: 5 - seconds };
        const id = openAiVideoId(facts);
        expect(id).toMatch(/^video_[0-9a-f]{32}$/);
        expect(readOpenAiVideoId(id)).toEqual(facts);
      }
    }
  }
  // Two jobs with the same facts get two ids.
  const facts = { createdAt: NOW, durationMs: 0, outcome: 'success' as const, model: 0, seconds: 0, size: 0 };
  expect(openAiVideoId(facts)).not.toBe(openAiVideoId(facts));
  expect(() => openAiVideoId({ ...facts, durationMs: MAX_ID_DURATION_MS + 1 })).toThrow(RangeError);
});

test('a Veo operation id carries its samples, aspect ratio, duration and a hash of its model', () => {
  const facts = {
    createdAt: NOW,
    durationMs: 20_000,
    outcome: 'filtered' as const,
    sampleCount: 4,
    aspect: 1,
    durationSeconds: 8,
    modelHash: modelHash('veo-3.0-generate-001'),
  };
  const id = veoOperationId(facts);
  expect(id).toMatch(/^[0-9a-z]{31}$/);
  expect(readVeoOperationId(id)).toEqual(facts);
  const plain = { ...facts, outcome: 'success' as const, sampleCount: 1, aspect: 0, durationSeconds: null };
  expect(readVeoOperationId(veoOperationId(plain))).toEqual(plain);
  expect(modelHash('veo-3.0-generate-001')).not.toBe(modelHash('veo-2.0-generate-001'));
});

test('a character id carries its creation time and self-portrait mark', () => {
  for (const selfPortrait of [true, false]) {
    const id = characterId({ createdAt: NOW, selfPortrait });
    expect(id).toMatch(/^char_[0-9a-f]{32}$/);
    expect(readCharacterId(id)).toEqual({ createdAt: NOW, selfPortrait });
  }
});

test('made-up, mistyped and foreign ids are not jobs', () => {
  for (let i = 0; i < 2000; i++) {
    const hex = randomBytes(16).toString('hex');
    expect(readOpenAiVideoId(`video_${hex}`)).toBeNull();
    expect(readCharacterId(`char_${hex}`)).toBeNull();
    expect(
      readVeoOperationId(
        BigInt(`0x${hex}${hex.slice(0, 8)}`)
          .toString(36)
          .padStart(31, '0')
          .slice(0, 31),
      ),
    ).toBeNull();
  }
  const video = openAiVideoId({ createdAt: NOW, durationMs: 1, outcome: 'success', model: 0, seconds: 0, size: 0 });
  // A video id is not a character id, and one changed digit is not a video.
  expect(readCharacterId(video.replace('video_', 'char_'))).toBeNull();
  expect(readOpenAiVideoId(video.slice(0, 10) + (video[10] === 'a' ? 'b' : 'a') + video.slice(11))).toBeNull();
  expect(readOpenAiVideoId(video.toUpperCase())).toBeNull();
  expect(readVeoOperationId('0123456789abcdef')).toBeNull();
});
