/**
 * Helpers for the text-endpoint e2e tests: raw SSE reading, the admin views of usage and
 * channel health, unique marker-bearing prompts and tiny real media files.
 */
import { randomBytes } from 'node:crypto';
import type { ChannelHealthView } from '../../src/proxy/channel-health';
import { pieces, tokensFor } from '../../simulator/anthropic-messages';
import type { UsageRecordView, UsageTotals } from '../../src/billing/usage';
import { ADMIN_TOKEN } from './stack';

export interface SseFrame {
  /** The `event:` name, or null for data-only frames (OpenAI chunks). */
  event: string | null;
  data: string;
}

/** Splits an SSE body into frames (comments and blank frames dropped). */
export function parseSse(text: string): SseFrame[] {
  const frames: SseFrame[] = [];
  for (const block of text.replace(/\r\n/g, '\n').split('\n\n')) {
    let event: string | null = null;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (event !== null || data.length > 0) frames.push({ event, data: data.join('\n') });
  }
  return frames;
}

/**
 * Reads an SSE response frame by frame; `onFrame` returning true stops reading (and cancels
 * the body). Resolves with the frames seen.
 */
export async function readSse(res: Response, onFrame?: (frame: SseFrame) => unknown): Promise<SseFrame[]> {
  if (!res.body) throw new Error('response has no body');
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const frames: SseFrame[] = [];
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, '\n');
    let at: number;
    while ((at = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      for (const frame of parseSse(`${block}\n\n`)) {
        frames.push(frame);
        if (onFrame?.(frame) === true) {
          await reader.cancel().catch(() => undefined);
          return frames;
        }
      }
    }
  }
  frames.push(...parseSse(buffer));
  return frames;
}

/** A short random tag: simulator attempt counters are per exact text, so fault prompts must be unique. */
export function nonce(): string {
  return randomBytes(4).toString('hex');
}

async function admin<T>(base: string, path: string): Promise<T> {
  const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  if (res.status !== 200) throw new Error(`GET ${path}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** The id of the live key with this name (names are unique per test file). */
export async function keyIdByName(base: string, name: string): Promise<string> {
  const list = await admin<{ data: { id: string; name: string }[] }>(base, '/admin/keys');
  const found = list.data.filter((k) => k.name === name);
  if (found.length !== 1) throw new Error(`expected one key named ${name}, found ${found.length}`);
  return found[0]!.id;
}

export type UsageTotal = UsageTotals;
export type UsageRow = UsageRecordView;

export interface UsageView {
  object: 'usage';
  key_id: string;
  totals: UsageTotal[];
  recent: UsageRow[];
}

export function usageOf(base: string, keyId: string): Promise<UsageView> {
  return admin<UsageView>(base, `/admin/keys/${encodeURIComponent(keyId)}/usage?limit=1000`);
}

/** Waits for the usage row of one request (by the x-request-id the client sent). */
export async function usageRowFor(base: string, keyId: string, requestId: string, timeoutMs = 10_000): Promise<UsageRow> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = (await usageOf(base, keyId)).recent.find((r) => r.request_id === requestId);
    if (row) return row;
    if (Date.now() > deadline) throw new Error(`no usage row for request ${requestId} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export type ChannelView = ChannelHealthView & { kind: 'text' };

/** The text channels of GET /admin/channels by name (video channels, listed too, carry no health figures). */
export async function channelsOf(base: string): Promise<Record<string, ChannelView>> {
  const list = await admin<{ object: 'list'; data: (ChannelView | { kind: 'video'; name: string })[] }>(base, '/admin/channels');
  return Object.fromEntries(list.data.filter((c): c is ChannelView => c.kind === 'text').map((c) => [c.name, c]));
}

/** A real 1x1 PNG. */
export const TINY_PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

/** A minimal PDF (starts with %PDF-). */
export const TINY_PDF_BASE64 = Buffer.from('%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n').toString('base64');

/** The simulator's token rule: ceil(chars / 4), at least 1. */
export function simTokens(chars: number): number {
  return Math.max(1, tokensFor(chars));
}

/** How many deltas the simulator splits a text into. */
export function simPieces(text: string): number {
  return pieces(text).length;
}
