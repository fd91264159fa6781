/** Arithmetic of the A/B benchmarks (bench:text-ab, bench:video-ab). */

export const mean = (values: number[]): number => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);

export const median = (values: number[]): number => {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** A relative change as a signed percentage. */
export const pct = (v: number): string => `${v >= 0 ? '+' : ''}${(100 * v).toFixed(1)} %`;

/** Per pair of processes, the change of `this`'s mean against `against`'s: median, min, max and all. */
export function pairChanges<P extends { side: 'this' | 'against'; pair: number }>(phases: P[], pairs: number, value: (p: P) => number) {
  const all = Array.from({ length: pairs }, (_, i) => {
    const of = (side: P['side']) => mean(phases.filter((p) => p.side === side && p.pair === i + 1).map(value));
    return of('this') / of('against') - 1;
  });
  return { median: median(all), min: Math.min(...all), max: Math.max(...all), all };
}
