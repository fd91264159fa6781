/**
 * Deterministic fault injection: markers such as `[sim:submit-5xx=2]` inside a prompt (or a
 * character name) choose the faults a request meets, so a test states its scenario in its input
 * and needs no shared switches. Random faults (faultRate) are separate and live here too.
 */

import type { Ctx, Reply } from './server';
import type { Job } from './jobs';
import { MAX_VIDEO_KIB } from './assets';

/** Everything the markers of one string ask for. Counts are 0 when the marker is absent. */
export interface Markers {
  fail: boolean;
  reject: boolean;
  filtered: boolean;
  drop: number;
  submit429: number;
  submit5xx: number;
  dropAfterCreate: number;
  poll429: number;
  poll5xx: number;
  content5xx: number;
  slowMs: number;
  /** Duration override for this job, or null to use the simulator's jobMs. */
  jobMs: number | null;
  /** OpenAI: DELETE cancels the job while it still runs, as some compatible providers do (OpenAI itself refuses). */
  cancellable: boolean;
  /** The finished video's size in KiB (`[sim:video-kib=N]`, at most 64 MiB); 0: the sample as it is. */
  videoKib: number;
}

/** Upper bounds keep a typo such as `[sim:slow=99999999]` from hanging a socket for days. */
const MAX_SLOW_MS = 10 * 60 * 1000;
export const MAX_JOB_MS = 24 * 3600 * 1000;
const MAX_COUNT = 1_000_000;

const MARKER = /\[sim:([a-z0-9-]+)(?:=(\d{1,9}))?\]/gi;

export function parseMarkers(text: string): Markers {
  const m: Markers = {
    fail: false,
    reject: false,
    filtered: false,
    drop: 0,
    submit429: 0,
    submit5xx: 0,
    dropAfterCreate: 0,
    poll429: 0,
    poll5xx: 0,
    content5xx: 0,
    slowMs: 0,
    jobMs: null,
    cancellable: false,
    videoKib: 0,
  };
  // Cheap pre-check: almost every prompt in a load test has no marker at all.
  if (!text.includes('[sim:') && !text.includes('[SIM:')) return m;
  for (const match of text.matchAll(MARKER)) {
    const name = (match[1] ?? '').toLowerCase();
    const raw = match[2];
    const n = raw === undefined ? 0 : Math.min(Number(raw), MAX_COUNT);
    switch (name) {
      case 'fail':
        m.fail = true;
        break;
      case 'reject':
        m.reject = true;
        break;
      case 'filtered':
        m.filtered = true;
        break;
      case 'drop':
        m.drop = n;
        break;
      case 'submit-429':
        m.submit429 = n;
        break;
      case 'submit-5xx':
        m.submit5xx = n;
        break;
      case 'drop-after-create':
        m.dropAfterCreate = n;
        break;
      case 'poll-429':
        m.poll429 = n;
        break;
      case 'poll-5xx':
        m.poll5xx = n;
        break;
      case 'content-5xx':
        m.content5xx = n;
        break;
      case 'slow':
        m.slowMs = Math.min(n, MAX_SLOW_MS);
        break;
      case 'ms':
        if (raw !== undefined) m.jobMs = Math.min(n, MAX_JOB_MS);
        break;
      case 'cancellable':
        m.cancellable = true;
        break;
      case 'video-kib':
        m.videoKib = Math.min(n, MAX_VIDEO_KIB);
        break;
      default:
        break; // unknown markers are ignored, like any other prompt text
    }
  }
  return m;
}

/** True when a create needs an attempt counter, i.e. its outcome depends on earlier attempts. */
export function hasSubmitFaults(m: Markers): boolean {
  return m.drop + m.submit429 + m.submit5xx + m.dropAfterCreate > 0;
}

export type SubmitFault = 'drop' | 'submit-429' | 'submit-500' | 'submit-503' | 'drop-after-create';

/**
 * The fault for the `attempt`-th (1-based) create of one marker string. Faults are consumed in a
 * fixed order, each for its own count of attempts: drop, then 429, then 5xx, then drop-after-create.
 * With a single marker this is exactly "the first N attempts"; combining markers chains scenarios
 * (e.g. `[sim:drop=1][sim:submit-429=1]`: attempt 1 dropped, attempt 2 gets 429, attempt 3 succeeds).
 */
export function submitFault(m: Markers, attempt: number): SubmitFault | null {
  let k = attempt;
  if (k <= m.drop) return 'drop';
  k -= m.drop;
  if (k <= m.submit429) return 'submit-429';
  k -= m.submit429;
  // Alternating 500/503 makes clients prove they retry both.
  if (k <= m.submit5xx) return k % 2 === 1 ? 'submit-500' : 'submit-503';
  k -= m.submit5xx;
  if (k <= m.dropAfterCreate) return 'drop-after-create';
  return null;
}

/** Fault for the `read`-th (1-based) status read of a job: first its 429s, then its 503s. */
export function pollFault(poll429: number, poll5xx: number, read: number): 'poll-429' | 'poll-5xx' | null {
  if (read <= poll429) return 'poll-429';
  if (read <= poll429 + poll5xx) return 'poll-5xx';
  return null;
}

/**
 * Per-key attempt counters for creates. Keys are the route plus the exact marker-bearing string,
 * so tests using different prompts never share a counter. Only strings that carry submit-fault
 * markers are counted, so ordinary traffic adds nothing here.
 */
export class AttemptCounters {
  private readonly counts = new Map<string, number>();

  /** Records one more attempt and returns its 1-based number. */
  next(route: string, text: string): number {
    const key = `${route}\n${text}`;
    const n = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, n);
    return n;
  }

  reset(): void {
    this.counts.clear();
  }
}

export type RandomFault = 'random-429' | 'random-500' | 'random-503' | 'random-drop';
const RANDOM_KINDS: readonly RandomFault[] = ['random-429', 'random-500', 'random-503', 'random-drop'];

/** With probability `rate`, one of the four random faults (equally likely); otherwise null. */
export function randomFault(rate: number, random: () => number = Math.random): RandomFault | null {
  if (rate <= 0) return null;
  if (random() >= rate) return null;
  return RANDOM_KINDS[Math.floor(random() * RANDOM_KINDS.length)] ?? 'random-500';
}

// ---------------------------------------------------------------------------------------------
// Gates used by the protocol modules (errors come out in the calling module's shape via ctx.error)
// ---------------------------------------------------------------------------------------------

export type SubmitGate = { reply: Reply } | { dropAfterCreate: boolean };

/**
 * Decides the fate of one create attempt before anything is created. `text` is the marker-bearing
 * string (prompt or character name); the counter scope is the route plus that exact text.
 */
export function gateSubmit(ctx: Ctx, text: string, m: Markers): SubmitGate {
  if (!hasSubmitFaults(m)) return { dropAfterCreate: false };
  const fault = submitFault(m, ctx.sim.attempts.next(ctx.route, text));
  if (fault === null) return { dropAfterCreate: false };
  ctx.sim.stats.fault(fault === 'submit-500' || fault === 'submit-503' ? 'submit-5xx' : fault);
  switch (fault) {
    case 'drop':
      return { reply: { kind: 'drop' } };
    case 'submit-429':
      return { reply: ctx.error(429, 'Rate limit exceeded, please retry later (simulated by [sim:submit-429]).', { headers: { 'retry-after': '1' } }) };
    case 'submit-500':
      return { reply: ctx.error(500, 'Internal error while submitting (simulated by [sim:submit-5xx]).') };
    case 'submit-503':
      return { reply: ctx.error(503, 'Service temporarily unavailable (simulated by [sim:submit-5xx]).') };
    case 'drop-after-create':
      return { dropAfterCreate: true };
  }
}

/** Wraps the success reply of a create with the `[sim:slow]` delay and `[sim:drop-after-create]`. */
export function finishCreate(ctx: Ctx, m: Markers, reply: Reply, dropAfterCreate: boolean): Reply {
  if (m.slowMs > 0) ctx.sim.stats.fault('slow');
  if (dropAfterCreate) return { kind: 'drop', created: reply, delayMs: m.slowMs };
  return { ...reply, delayMs: m.slowMs };
}

/** Counts the outcome markers of a job that was just accepted. */
export function countOutcome(ctx: Ctx, job: Job): void {
  if (job.outcome !== 'success') ctx.sim.stats.fault(job.outcome);
}

/** `[sim:poll-429=N]` / `[sim:poll-5xx=N]`: the job's first status reads fail. */
export function gatePoll(ctx: Ctx, job: Job): Reply | null {
  const total = job.poll429 + job.poll5xx;
  if (job.pollReads >= total) return null; // also keeps the counter bounded once the faults are spent
  job.pollReads += 1;
  const fault = pollFault(job.poll429, job.poll5xx, job.pollReads);
  if (fault === null) return null;
  ctx.sim.stats.fault(fault);
  return fault === 'poll-429'
    ? ctx.error(429, 'Too many requests polling this job (simulated by [sim:poll-429]).', { headers: { 'retry-after': '1' } })
    : ctx.error(503, 'Service temporarily unavailable (simulated by [sim:poll-5xx]).');
}

/** `[sim:content-5xx=N]`: the job's first content downloads answer 503. */
export function gateContent(ctx: Ctx, job: Job): Reply | null {
  if (job.contentReads >= job.content5xx) return null;
  job.contentReads += 1;
  ctx.sim.stats.fault('content-5xx');
  return ctx.error(503, 'Service temporarily unavailable while reading content (simulated by [sim:content-5xx]).');
}

// ---------------------------------------------------------------------------------------------
// Text protocols (Anthropic Messages, Chat Completions): markers in the last user message
// ---------------------------------------------------------------------------------------------

/** Markers only the text protocols read; `[sim:slow]` and the submit faults come from parseMarkers. */
export interface TextMarkers {
  /** `[sim:429]`, `[sim:500]`, `[sim:529]` (any 4xx/5xx code): answer that status, before any byte. */
  status: number | null;
  /** `[sim:delay=MS]`: pause between stream events. */
  delayMs: number;
  /** `[sim:midstream-error]`: a streamed answer fails after some deltas. */
  midstreamError: boolean;
  /** `[sim:hang]`: a streamed answer sends its first event, then nothing until the client leaves. */
  hang: boolean;
  /** `[sim:tool]`: with tools in the request, answer a tool call. */
  tool: boolean;
  /** `[sim:long=KIB]`: the answer's text is this many KiB long (0: the usual echo). */
  longKib: number;
}

const MAX_DELAY_MS = 60 * 1000;
/** 64 MiB: long enough to fill any socket's buffers, short enough not to exhaust the simulator. */
const MAX_LONG_KIB = 64 * 1024;

export function parseTextMarkers(text: string): TextMarkers {
  const m: TextMarkers = { status: null, delayMs: 0, midstreamError: false, hang: false, tool: false, longKib: 0 };
  if (!text.includes('[sim:') && !text.includes('[SIM:')) return m;
  for (const match of text.matchAll(MARKER)) {
    const name = (match[1] ?? '').toLowerCase();
    if (/^[45]\d\d$/.test(name)) m.status = Number(name);
    else if (name === 'delay') m.delayMs = Math.min(Number(match[2] ?? 0), MAX_DELAY_MS);
    else if (name === 'midstream-error') m.midstreamError = true;
    else if (name === 'hang') m.hang = true;
    else if (name === 'tool') m.tool = true;
    else if (name === 'long') m.longKib = Math.min(Number(match[2] ?? 0), MAX_LONG_KIB);
  }
  return m;
}

/** The answer's text before any limit cuts it: the prompt echoed, repeated to `[sim:long]`'s length when asked. */
export function echoText(prompt: string, t: TextMarkers): string {
  const echo = `Echo: ${prompt.slice(0, 200)}`;
  if (t.longKib === 0) return echo;
  const length = t.longKib * 1024;
  return `${echo} `.repeat(Math.ceil(length / (echo.length + 1))).slice(0, length);
}

/** Waits `ms`, resolving early when `signal` aborts (the client left). */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    timer.unref();
    signal.addEventListener('abort', done);
  });
}

/** Resolves when `signal` aborts: `[sim:hang]` holds a stream open until the client disconnects. */
export function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/**
 * The fault gates shared by both text protocols, in order: `[sim:<status>]`, then the submit faults
 * (`drop`, `submit-429`, `submit-5xx`; `drop-after-create` also drops, after the answer was computed).
 * Returns the reply to send instead of the answer, or null.
 */
/**
 * The faults a text request's prompt asks for: its markers, and the reply that ends the request
 * early (a status fault, an attempt counter) when there is one. Shared by both text protocols.
 */
export function textFaults(ctx: Ctx, prompt: string): { markers: Markers; t: TextMarkers; fault: Reply | null } {
  const markers = parseMarkers(prompt);
  const t = parseTextMarkers(prompt);
  const fault = gateText(ctx, prompt, markers, t);
  if (!fault && markers.slowMs > 0) ctx.sim.stats.fault('slow');
  return { markers, t, fault: fault ?? null };
}

export function gateText(ctx: Ctx, text: string, m: Markers, t: TextMarkers): Reply | null {
  if (t.status !== null) {
    ctx.sim.stats.fault(`status-${t.status}`);
    const message =
      t.status === 529
        ? 'Overloaded'
        : t.status === 429
          ? 'Rate limit exceeded (simulated by a [sim:429] marker).'
          : `Simulated error (a [sim:${t.status}] marker).`;
    return { ...ctx.error(t.status, message, t.status === 429 ? { headers: { 'retry-after': '1' } } : undefined), delayMs: m.slowMs };
  }
  const gate = gateSubmit(ctx, text, m);
  if ('reply' in gate) return { ...gate.reply, delayMs: m.slowMs };
  if (gate.dropAfterCreate) return { kind: 'drop', delayMs: m.slowMs };
  return null;
}
