import { attemptsWithin } from '../../src/workflows/retry-budget';

describe('attemptsWithin', () => {
  const backoff = { initialInterval: 50, backoffCoefficient: 2, maximumInterval: 2000 };

  test('counts the first attempt and one after each interval until the waits reach the timeout', () => {
    // Waits 50, 100, 200, 400, 800: 1,550 ms >= 1,500 after the sixth attempt.
    expect(attemptsWithin(1500, backoff)).toBe(6);
    expect(attemptsWithin(1550, backoff)).toBe(6);
    expect(attemptsWithin(1551, backoff)).toBe(7);
    expect(attemptsWithin(0, backoff)).toBe(1);
  });

  test('intervals stop growing at the maximum', () => {
    // 50..1600 wait 3,150 ms over 6 intervals; then 2,000 ms each.
    expect(attemptsWithin(3150, backoff)).toBe(7);
    expect(attemptsWithin(3150 + 2000 * 10, backoff)).toBe(17);
    expect(attemptsWithin(120_000, backoff)).toBe(7 + Math.ceil((120_000 - 3150) / 2000));
  });
});
