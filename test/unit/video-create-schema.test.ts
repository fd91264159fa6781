import { InvalidRequestError } from '../../src/api/errors';
import { parseVideoCreate } from '../../src/api/schemas/video-task-create';

function rejection(input: unknown): InvalidRequestError {
  try {
    parseVideoCreate(input);
  } catch (err) {
    if (err instanceof InvalidRequestError) return err;
    throw err;
  }
  throw new Error('expected a 400');
}

test('motion defaults: portrait, small, the first allowed duration, watermark on', () => {
  const v = parseVideoCreate({ model: 'motion-2', prompt: 'x', images: [] });
  expect(v.size).toBe('720x1280');
  expect(v.seconds).toBe(10);
  expect(v.body.watermark).toBeUndefined();
});

test.each([
  ['portrait', 'small', '720x1280'],
  ['portrait', 'large', '1024x1792'],
  ['landscape', 'small', '1280x720'],
  ['landscape', 'large', '1792x1024'],
])('motion %s/%s -> %s', (orientation, size, dims) => {
  expect(parseVideoCreate({ model: 'motion-2-pro', prompt: 'x', images: [], orientation, size, duration: 25 }).size).toBe(dims);
});

test('vidgen keeps aspect_ratio and has no motion size', () => {
  const v = parseVideoCreate({ model: 'vidgen3', prompt: 'x', aspect_ratio: '9:16' });
  expect(v.body.aspect_ratio).toBe('9:16');
  expect(v.size).toBeUndefined();
});

test('aspect_ratio is accepted (and ignored upstream) by vidgen2 models', () => {
  expect(parseVideoCreate({ model: 'vidgen2', prompt: 'x', aspect_ratio: '16:9' }).model.honorsAspectRatio).toBe(false);
});

test.each([
  [{ model: 'motion-2', prompt: 'x', images: [], duration: 25 }, 'duration'],
  [{ model: 'vidgen3', prompt: 'x', extra: 1 }, 'extra'],
  [{ model: 'vidgen_3_1-fast', prompt: 'x' }, 'model'],
  [{ model: 'vidgen3', prompt: 'x', images: ['a', 'b'] }, 'images'],
  [{ model: 'motion-2', prompt: 'x', images: [], character_url: 'https://e.com/c.mp4', character_timestamps: '3,1' }, 'character_timestamps'],
])('rejects %j naming %s', (input, param) => {
  const err = rejection(input);
  expect(err.status).toBe(400);
  expect(err.param).toBe(param);
});

test('character timestamps are normalised', () => {
  const v = parseVideoCreate({ model: 'motion-2', prompt: 'x', images: [], character_url: 'https://e.com/c.mp4', character_timestamps: ' 0.5 , 2 ' });
  expect(v.body.character_timestamps).toBe('0.5,2');
});
