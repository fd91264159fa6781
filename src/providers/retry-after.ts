/**
 * A provider's Retry-After header (seconds, or an HTTP date) in milliseconds from now; undefined
 * when absent or unreadable. The one parser of both HTTP stacks (video clients, text proxy).
 */
export function retryAfterMs(header: string | null | undefined): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
