/** How numbers and times read on the pages. 1 credit = 1 µUSD (docs/api.md, Billing). */

export function credits(n: number | null | undefined): string {
  if (n === null || n === undefined) return 'unlimited';
  return n.toLocaleString('en-US');
}

export function dollars(n: number | null | undefined): string {
  if (n === null || n === undefined) return '';
  return `$${(n / 1_000_000).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 4 })}`;
}

export function dateTime(unix: number | null | undefined): string {
  if (!unix) return '';
  return new Date(unix * 1000).toLocaleString('en-GB', { dateStyle: 'short', timeStyle: 'medium' });
}

/** "12 s", "5 min", "3 h", "2 d" since `unix`. */
export function age(unix: number, now = Date.now() / 1000): string {
  const s = Math.max(0, Math.round(now - unix));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h`;
  return `${Math.floor(s / 86400)} d`;
}

/** A `<input type="date">` value (UTC day) as a unix second, or undefined. */
export function dayToUnix(value: string, endOfDay = false): number | undefined {
  if (!value) return undefined;
  const t = Date.parse(`${value}T00:00:00Z`);
  if (Number.isNaN(t)) return undefined;
  return t / 1000 + (endOfDay ? 86400 : 0);
}
