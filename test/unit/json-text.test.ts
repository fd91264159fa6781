/**
 * The nesting-depth scan that runs before JSON.parse on every JSON body: exact at the limit,
 * blind to brackets inside strings (escaped quotes and backslash runs included), and in
 * agreement with the depth of the value JSON.parse builds, for generated JSON.
 */
import fc from 'fast-check';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../../src/api/schemas/json-text';

const nested = (depth: number, open = '[', close = ']') => open.repeat(depth) + close.repeat(depth);

/** The nesting depth of a parsed value: 0 for a scalar, 1 for a flat array or object. */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  const children = Array.isArray(value) ? value : Object.values(value as Record<string, unknown>);
  return 1 + children.reduce<number>((max, child) => Math.max(max, depthOf(child)), 0);
}

test('the limit is exact: 64 levels pass, 65 do not', () => {
  expect(MAX_JSON_DEPTH).toBe(64);
  expect(exceedsJsonDepth(nested(64))).toBe(false);
  expect(exceedsJsonDepth(nested(65))).toBe(true);
  expect(exceedsJsonDepth(`{"a":${nested(63)}}`)).toBe(false);
  expect(exceedsJsonDepth(`{"a":${nested(64)}}`)).toBe(true);
  expect(exceedsJsonDepth('{"a":{"b":{"c":[1,2,{"d":[]}]}}}', 6)).toBe(false);
  expect(exceedsJsonDepth('{"a":{"b":{"c":[1,2,{"d":[]}]}}}', 5)).toBe(true);
});

test('depth is the deepest point, not the number of brackets', () => {
  const wide = `[${Array.from({ length: 10_000 }, () => '[[1]]').join(',')}]`;
  expect(exceedsJsonDepth(wide, 3)).toBe(false);
  expect(exceedsJsonDepth(wide, 2)).toBe(true);
});

test('the 150,000-deep array of the finding is refused, in an unknown field too', () => {
  expect(exceedsJsonDepth(`{"model":"m","messages":[],"x":${nested(150_000)}}`)).toBe(true);
});

test('brackets inside strings do not count, whatever the escapes', () => {
  const deepText = nested(1000);
  expect(exceedsJsonDepth(JSON.stringify({ prompt: deepText }))).toBe(false);
  expect(exceedsJsonDepth(`{"a":"\\"${deepText}"}`)).toBe(false); // an escaped quote does not end the string
  expect(exceedsJsonDepth(`{"a":"\\\\","b":${nested(70)}}`)).toBe(true); // an escaped backslash does not escape the quote
  expect(exceedsJsonDepth(`{"a":"\\\\\\"${deepText}"}`)).toBe(false); // three backslashes: the quote is escaped
  expect(exceedsJsonDepth(`{"${deepText}":1}`)).toBe(false); // keys are strings too
});

test('an unterminated string ends the scan; JSON.parse refuses the text', () => {
  expect(exceedsJsonDepth('{"a":"[[[[')).toBe(false);
  expect(exceedsJsonDepth(nested(70).slice(0, 70))).toBe(true); // unbalanced but deep: still refused first
});

test('agrees with the depth of the parsed value for generated JSON', () => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 10 }), (value, limit) => {
      const text = JSON.stringify(value);
      expect(exceedsJsonDepth(text, limit)).toBe(depthOf(JSON.parse(text)) > limit);
    }),
    { seed: 17, numRuns: 2000 },
  );
});

test('strings with quotes, backslashes and brackets never count', () => {
  fc.assert(
    fc.property(fc.array(fc.string({ unit: fc.constantFrom('"', '\\', '[', ']', '{', '}', 'a', '\u2028') }), { maxLength: 8 }), (strings) => {
      expect(exceedsJsonDepth(JSON.stringify(strings), 1)).toBe(false);
      expect(exceedsJsonDepth(JSON.stringify(Object.fromEntries(strings.map((s) => [s, s]))), 1)).toBe(false);
    }),
    { seed: 18, numRuns: 2000 },
  );
});
