/**
 * Progress for providers that report none (Veo): an ease-out estimate from elapsed time
 * and the channel's expected job length, held below 95 until the job is really done.
 * Pure, so the workflow computes it deterministically.
 */
export function estimateProgress(elapsedMs: number, expectedMs: number): number {
  if (elapsedMs <= 0 || expectedMs <= 0) return 0;
  return Math.min(95, Math.floor(95 * (1 - Math.exp((-2.5 * elapsedMs) / expectedMs))));
}

/** Progress never goes backwards and reaches 100 only on completion. */
export function nextProgress(current: number, reported: number | null, estimate: number): number {
  const candidate = Math.floor(reported ?? estimate);
  return Math.max(current, Math.min(99, Math.max(0, candidate)));
}
