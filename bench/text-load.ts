/**
 * The load generator of the text benchmarks (bench:text, bench:text-ab): the requests of each
 * protocol and mode, how an answer is checked for completeness, and the open and closed loops
 * that send them over one keep-alive agent per target.
 */
import http from 'node:http';

export const PROTOCOLS = ['anthropic', 'openai'] as const;
export const MODES = ['plain', 'stream'] as const;
export type Protocol = (typeof PROTOCOLS)[number];
export type Mode = (typeof MODES)[number];

/** A comma-separated option value (--protocols, --modes, ...) checked against what it may hold. */
export function listOf<T extends string>(name: string, value: string, allowed: readonly T[]): T[] {
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = items.filter((s) => !(allowed as readonly string[]).includes(s));
  if (items.length === 0 || bad.length > 0) throw new Error(`--${name}: expected a comma-separated list of ${allowed.join(', ')}; got '${value}'`);
  return allowed.filter((a) => items.includes(a));
}

// ---------------------------------------------------------------------------------------------
// Requests and their validation
// ---------------------------------------------------------------------------------------------

export interface Scenario {
  protocol: Protocol;
  mode: Mode;
  path: string;
  body: Buffer;
  headers: http.OutgoingHttpHeaders;
  /** null when the response is a complete, successful answer; else why not. */
  check(body: string): string | null;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseObject(body: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(body);
    return isRecord(value) ? value : null;
  } catch {
    return null;
  }
}

/** The last SSE event block of a stream (blank-line separated). */
function lastEvent(body: string): string {
  const blocks = body.trimEnd().split(/\r?\n\r?\n/);
  return blocks[blocks.length - 1] ?? '';
}

export function scenario(protocol: Protocol, mode: Mode, key: string): Scenario {
  const stream = mode === 'stream';
  if (protocol === 'anthropic') {
    const body = { model: 'cm-sonnet-4.5', max_tokens: 64, messages: [{ role: 'user', content: 'Hello bench' }], ...(stream ? { stream: true } : {}) };
    return {
      protocol,
      mode,
      path: '/v1/messages',
      body: Buffer.from(JSON.stringify(body)),
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      check: stream
        ? (text) => (/^(event: *message_stop|data: *\{"type": *"message_stop")/m.test(lastEvent(text)) ? null : 'stream did not end with message_stop')
        : (text) => {
            const msg = parseObject(text);
            return msg && msg.type === 'message' && Array.isArray(msg.content) && typeof msg.stop_reason === 'string' ? null : 'not a complete message';
          },
    };
  }
  const body = {
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'Hello bench' }],
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  };
  return {
    protocol,
    mode,
    path: '/v1/chat/completions',
    body: Buffer.from(JSON.stringify(body)),
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    check: stream
      ? (text) => (lastEvent(text).trim() === 'data: [DONE]' ? null : 'stream did not end with data: [DONE]')
      : (text) => {
          const c = parseObject(text);
          const choice = c && Array.isArray(c.choices) ? (c.choices as unknown[])[0] : undefined;
          return c && c.object === 'chat.completion' && isRecord(choice) && typeof choice.finish_reason === 'string' ? null : 'not a complete chat.completion';
        },
  };
}

// ---------------------------------------------------------------------------------------------
// The load generator
// ---------------------------------------------------------------------------------------------

export interface Target<Name extends string = string> {
  name: Name;
  host: string;
  port: number;
  agent: http.Agent;
}

/** One finished request; times are process.hrtime.bigint() nanoseconds. */
export interface Outcome {
  scheduled: bigint;
  sent: bigint;
  firstByte: bigint;
  end: bigint;
  error: string | null;
}

const REQUEST_IDLE_TIMEOUT_MS = 15_000;
export const now = (): bigint => process.hrtime.bigint();

/** Sends one request; `done` is called exactly once, after the last byte or on failure. */
export function fire(target: Target, sc: Scenario, scheduled: bigint, done: (o: Outcome) => void): void {
  const sent = now();
  let firstByte = 0n;
  let finished = false;
  const finish = (error: string | null) => {
    if (finished) return;
    finished = true;
    done({ scheduled, sent, firstByte, end: now(), error });
  };
  const req = http.request(
    {
      agent: target.agent,
      host: target.host,
      port: target.port,
      method: 'POST',
      path: sc.path,
      headers: { ...sc.headers, 'content-length': sc.body.length },
    },
    (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => {
        if (firstByte === 0n) firstByte = now();
        chunks.push(chunk);
      });
      res.on('end', () => {
        const end = now();
        if (finished) return;
        finished = true;
        let error: string | null = null;
        if (res.statusCode !== 200) error = `status ${res.statusCode ?? '?'}`;
        else error = sc.check(Buffer.concat(chunks).toString('utf8'));
        done({ scheduled, sent, firstByte: firstByte || end, end, error });
      });
      res.on('error', (err: NodeJS.ErrnoException) => finish(`response ${err.code ?? err.message}`));
      res.on('close', () => finish('response closed early'));
    },
  );
  req.setTimeout(REQUEST_IDLE_TIMEOUT_MS, () => req.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })));
  req.on('error', (err: NodeJS.ErrnoException) => finish(err.code ?? err.message));
  req.end(sc.body);
}

/** Open loop: request i is due at start + i/rate whatever happened to the earlier ones. */
export function openLoop(target: Target, sc: Scenario, rate: number, seconds: number): Promise<Outcome[]> {
  const total = Math.max(1, Math.round(rate * seconds));
  const intervalNs = 1e9 / rate;
  const outcomes: Outcome[] = [];
  const start = now() + 1_000_000n;
  const due = (i: number): bigint => start + BigInt(Math.round(i * intervalNs));
  return new Promise((resolve) => {
    let next = 0;
    let pending = 0;
    const onDone = (o: Outcome) => {
      outcomes.push(o);
      pending -= 1;
      if (next === total && pending === 0) resolve(outcomes);
    };
    const tick = () => {
      const t = now();
      while (next < total && due(next) <= t) {
        pending += 1;
        fire(target, sc, due(next), onDone);
        next += 1;
      }
      // Timers have 1 ms granularity: a late tick sends every request that fell due meanwhile.
      if (next < total) setTimeout(tick, Math.max(0, Number(due(next) - now()) / 1e6));
    };
    tick();
  });
}

/** Closed loop: `concurrency` connections, each sends again as soon as its answer ended. */
export function closedLoop(target: Target, sc: Scenario, concurrency: number, seconds: number): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  const until = now() + BigInt(Math.round(seconds * 1e9));
  return new Promise((resolve) => {
    let running = concurrency;
    const loop = () => {
      if (now() >= until) {
        running -= 1;
        if (running === 0) resolve(outcomes);
        return;
      }
      fire(target, sc, now(), (o) => {
        outcomes.push(o);
        loop();
      });
    };
    for (let i = 0; i < concurrency; i += 1) loop();
  });
}

export const toMs = (ns: bigint): number => Number(ns) / 1e6;

/** Latency percentiles of a phase, ms. */
export interface Dist {
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

export function dist(values: number[]): Dist {
  const sorted = Float64Array.from(values).sort();
  const at = (p: number) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!);
  return { p50: at(50), p90: at(90), p99: at(99), p999: at(99.9), max: sorted.length ? sorted[sorted.length - 1]! : NaN };
}

export type PhaseKind = 'fixed' | 'saturation';

/** Which phase of which scenario against which target. */
export interface PhaseOf<TargetName extends string> {
  protocol: Protocol;
  mode: Mode;
  target: TargetName;
  phase: PhaseKind;
  offeredRate: number | null;
  concurrency: number | null;
  seconds: number;
}

/** What every text bench reports of a phase's requests, whatever else it measures beside. */
export interface OutcomeStats {
  requests: number;
  ok: number;
  errors: number;
  errorKinds: Record<string, number>;
  /** Successful responses per second, first send to last answer. */
  rps: number;
  /** ms, request sent -> last byte (successful requests). */
  latency: Dist;
  /** ms, scheduled send time -> last byte (fixed rate only: includes the load generator's own lag). */
  fromSchedule: Dist | null;
  /** ms, request sent -> first body byte. */
  firstByte: Dist;
}

/** The phase's statistics, and its first send (where a timeline starts). */
export function outcomeStats(outcomes: Outcome[], fixedRate: boolean): { stats: OutcomeStats; first: bigint } {
  const good = outcomes.filter((o) => o.error === null);
  const errorKinds: Record<string, number> = {};
  for (const o of outcomes) if (o.error !== null) errorKinds[o.error] = (errorKinds[o.error] ?? 0) + 1;
  let first = outcomes[0]?.sent ?? 0n;
  let last = first;
  for (const o of outcomes) {
    if (o.sent < first) first = o.sent;
    if (o.end > last) last = o.end;
  }
  const stats: OutcomeStats = {
    requests: outcomes.length,
    ok: good.length,
    errors: outcomes.length - good.length,
    errorKinds,
    rps: good.length / Math.max(1e-9, toMs(last - first) / 1000),
    latency: dist(good.map((o) => toMs(o.end - o.sent))),
    fromSchedule: fixedRate ? dist(good.map((o) => toMs(o.end - o.scheduled))) : null,
    firstByte: dist(good.map((o) => toMs(o.firstByte - o.sent))),
  };
  return { stats, first };
}
