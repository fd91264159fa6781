import { parseRange } from '../../src/api/routes/files';
import { estimateProgress, nextProgress } from '../../src/workflows/progress';

test('estimated progress rises, stays below 95', () => {
  const points = [0, 1000, 5000, 10_000, 60_000, 600_000].map((t) => estimateProgress(t, 10_000));
  expect(points[0]).toBe(0);
  for (let i = 1; i < points.length; i++) expect(points[i]!).toBeGreaterThanOrEqual(points[i - 1]!);
  expect(points[points.length - 1]).toBe(95);
});

test('progress never goes backwards and only completion reaches 100', () => {
  expect(nextProgress(50, 30, 10)).toBe(50);
  expect(nextProgress(50, 70, 10)).toBe(70);
  expect(nextProgress(50, null, 60)).toBe(60);
  expect(nextProgress(50, 100, 0)).toBe(99);
  expect(nextProgress(0, -5, 0)).toBe(0);
});

test.each([
  [undefined, null],
  ['bytes=0-9', { start: 0, end: 9 }],
  ['bytes=5-', { start: 5, end: 99 }],
  ['bytes=-10', { start: 90, end: 99 }],
  ['bytes=90-500', { start: 90, end: 99 }],
  ['bytes=100-', 'invalid'],
  ['bytes=9-3', 'invalid'],
  ['bytes=-0', 'invalid'],
  // Ignored, not refused (RFC 9110, 14.2): the whole file is served.
  ['bytes=0-1,3-4', null],
  ['items=0-1', null],
  ['bytes=abc', null],
  ['bytes=-', null],
])('range %s of 100 bytes', (header, expected) => {
  expect(parseRange(header, 100)).toEqual(expected);
});
