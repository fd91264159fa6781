/**
 * The provider simulator: a real HTTP server (node:http, no framework) that speaks upstream
 * provider protocols so the gateway's tests, benchmarks and demo never need the real providers.
 *
 * This file is the protocol-independent part: routing, auth/idempotency/latency/random-fault
 * plumbing, body reading, reply writing (with Range support) and the /_sim introspection routes.
 * Each upstream protocol is one ProtocolModule in its own file; adding a protocol (e.g. Anthropic
 * Messages) means writing one more module and listing it in `protocolModules()` below. Modules
 * import only *types* from here and get every helper through `Ctx`, so there is no runtime import
 * cycle between this file and the modules.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { createHash, createHmac } from 'node:crypto';
import { JobStore, statusAt, terminalAt, type Character, type Flavor, type Job } from './jobs';
import { AttemptCounters, MAX_JOB_MS, randomFault, type RandomFault } from './faults';
import { openaiVideosModule } from './openai-videos';
import { geminiVeoModule, veoBlobModule } from './gemini-veo';
import { anthropicMessagesModule } from './anthropic-messages';
import { openaiChatModule } from './openai-chat';
import { openaiResponsesModule } from './openai-responses';
import { ResponseStore, statusOf } from './responses-store';
import { TEXT_PROVIDERS, VIDEO_PROVIDERS, type ProviderType } from '../src/providers/registry';

export interface SimulatorOptions {
  port?: number; // 0 = random free port; default 0
  host?: string; // default '127.0.0.1'
  jobMs: number; // how long a job takes from create to completed
  faultRate?: number; // 0..1 probability of a random fault (429/500/503/dropped connection) on any non-/_sim request; default 0
  latencyMs?: number; // added latency on every upstream-protocol response; default 0
  apiKey?: string; // when set, only this key is accepted (401 OpenAI-style / 403 Google-style otherwise); when unset any non-empty key is accepted, a missing key is rejected
}
export interface RunningSimulator {
  url: string;
  port: number;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Types shared with protocol modules
// ---------------------------------------------------------------------------------------------

export type HeaderMap = Record<string, string>;
interface ReplyBase {
  headers?: HeaderMap;
  /** Extra wait before the reply is written (the `[sim:slow=MS]` marker). */
  delayMs?: number;
}
export interface JsonReply extends ReplyBase {
  kind: 'json';
  status: number;
  body: unknown;
}
export interface BytesReply extends ReplyBase {
  kind: 'bytes';
  status: number;
  body: Buffer;
  contentType: string;
  /** Honour a single `Range: bytes=a-b` request header (206/416). */
  ranges?: boolean;
}
export interface EmptyReply extends ReplyBase {
  kind: 'empty';
  status: number;
}
/**
 * Destroy the TCP connection without any response. `created` is what the response would have been
 * when the request did create something (`[sim:drop-after-create]`): an Idempotency-Key retry
 * gets it back.
 */
export interface DropReply extends ReplyBase {
  kind: 'drop';
  created?: Reply;
}
/**
 * A streamed body (SSE): the status and headers go out first, then `run` writes chunks until it
 * returns (the response then ends). `signal` aborts when the client disconnects or the simulator closes.
 */
export interface StreamReply extends ReplyBase {
  kind: 'stream';
  status: number;
  contentType: string;
  run(out: { write(chunk: string): void; readonly signal: AbortSignal }): Promise<void>;
}
export type Reply = JsonReply | BytesReply | EmptyReply | DropReply | StreamReply;

/** Protocol-neutral error details; each module renders them in its own error shape. */
export interface ErrorDetail {
  code?: string | null;
  param?: string | null;
  headers?: HeaderMap;
}

export type ParsedBody = { kind: 'empty' } | { kind: 'json'; value: unknown } | { kind: 'form'; form: FormData };

export type Method = 'GET' | 'POST' | 'DELETE';

export interface RouteDef {
  /** Stable name used in /_sim/stats and as the attempt-counter scope, e.g. `openai.videos.create`. */
  name: string;
  method: Method;
  /** Anchored regex on the path (no query); capture groups become `ctx.params`. */
  path: RegExp;
  /** Creates something: an Idempotency-Key header replays the first response. */
  idempotent?: boolean;
  /** Default true for upstream modules; false lets a route skip the module's authenticate(). */
  auth?: boolean;
  handle(ctx: Ctx): Promise<Reply> | Reply;
}

export interface ProtocolModule {
  name: string;
  /** Path prefixes this module owns; the longest matching prefix picks the error shape of unmatched paths. */
  prefixes: readonly string[];
  /** Upstream protocols get latency, random faults and auth; /_sim routes get none of them. */
  upstream: boolean;
  routes: readonly RouteDef[];
  /** Render an error in this protocol's shape. */
  error(status: number, message: string, detail?: ErrorDetail): Reply;
  /** null when the request's credentials are acceptable, else the rejection. */
  authenticate?(ctx: Ctx): Reply | null;
  /** Headers added to every response of this module (e.g. `x-request-id`). */
  responseHeaders?(): HeaderMap;
  /** Rebuilds a job of an earlier simulator process from its id, when the id is this module's. */
  recoverJob?(id: string): Job | undefined;
  /** The same for characters. */
  recoverCharacter?(id: string): Character | undefined;
}

export interface Ctx {
  readonly req: IncomingMessage;
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly params: readonly string[];
  readonly route: string;
  readonly sim: SimState;
  /** One clock reading per request, so a response is internally consistent. */
  readonly now: number;
  /** Absolute base URL as the client addressed us (Host header), for URLs put in responses. */
  readonly baseUrl: string;
  header(name: string): string | undefined;
  rawBody(): Promise<Buffer>;
  /** JSON or multipart/form-data; throws BodyError (rendered as a 4xx in the module's shape). */
  body(): Promise<ParsedBody>;
  /** An error reply in the current module's shape. */
  error(status: number, message: string, detail?: ErrorDetail): Reply;
}

export interface ResolvedOptions {
  jobMs: number;
  faultRate: number;
  latencyMs: number;
  apiKey: string | undefined;
}

export interface SimState {
  readonly options: ResolvedOptions;
  readonly jobs: JobStore;
  /** Responses API responses (openai-responses.ts). */
  readonly responses: ResponseStore;
  readonly attempts: AttemptCounters;
  readonly stats: Stats;
  /** Short HMAC of `value` under a fixed key (signed blob URLs, valid across restarts). */
  sign(value: string): string;
}

/** A request body problem; the router renders it with the module's error shape. */
export class BodyError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The client went away while we were reading its request; nothing can be answered. */
class ClientGone extends Error {}

// ---------------------------------------------------------------------------------------------
// Counters
// ---------------------------------------------------------------------------------------------

export class Stats {
  jobsCreated: Record<Flavor, number> = { veo: 0, openai: 0 };
  charactersCreated = 0;
  private requests = new Map<string, number>();
  private faults = new Map<string, number>();
  private text = { requests: 0, inputTokens: 0, outputTokens: 0 };

  /** One answered text request (Anthropic Messages / Chat Completions) and its token usage. */
  textRequest(inputTokens: number, outputTokens: number): void {
    this.text.requests += 1;
    this.text.inputTokens += inputTokens;
    this.text.outputTokens += outputTokens;
  }

  request(route: string): void {
    this.requests.set(route, (this.requests.get(route) ?? 0) + 1);
  }

  fault(kind: string): void {
    this.faults.set(kind, (this.faults.get(kind) ?? 0) + 1);
  }

  jobCreated(flavor: Flavor): void {
    this.jobsCreated[flavor] += 1;
  }

  reset(): void {
    this.jobsCreated = { veo: 0, openai: 0 };
    this.charactersCreated = 0;
    this.requests.clear();
    this.faults.clear();
    this.text = { requests: 0, inputTokens: 0, outputTokens: 0 };
  }

  toJSON(jobsStored: number): unknown {
    return {
      jobsCreated: { ...this.jobsCreated },
      charactersCreated: this.charactersCreated,
      jobsStored,
      requests: Object.fromEntries(this.requests),
      faults: Object.fromEntries(this.faults),
      // Present once a text request was answered since the last reset.
      ...(this.text.requests > 0 ? { text: { ...this.text } } : {}),
    };
  }
}

/**
 * Idempotency-Key records: first successful (or created-then-dropped) response per method+path+key.
 * Scoping by path means the same key on two different remix sources or Veo models is two records.
 */
class IdempotencyStore {
  private readonly done = new Map<string, Reply>();
  private readonly inFlight = new Set<string>();

  get(key: string): Reply | undefined {
    return this.done.get(key);
  }
  isInFlight(key: string): boolean {
    return this.inFlight.has(key);
  }
  begin(key: string): void {
    this.inFlight.add(key);
  }
  end(key: string): void {
    this.inFlight.delete(key);
  }
  record(key: string, reply: Reply): void {
    this.done.set(key, reply);
  }
  clear(): void {
    this.done.clear();
  }
}

// ---------------------------------------------------------------------------------------------
// /_sim introspection (no auth, no latency, no random faults)
// ---------------------------------------------------------------------------------------------

function simError(status: number, message: string, detail?: ErrorDetail): Reply {
  return { kind: 'json', status, body: { error: { code: status, message } }, headers: detail?.headers };
}

function introspectionModule(idem: IdempotencyStore): ProtocolModule {
  return {
    name: 'sim',
    prefixes: ['/_sim/'],
    upstream: false,
    error: simError,
    routes: [
      {
        // The pid lets a parent that started this process as a child (the gateway's `npm start`) tell
        // its own simulator from another process answering on the port.
        name: 'sim.health',
        method: 'GET',
        path: /^\/_sim\/health$/,
        handle: () => ({ ...json(200, { ok: true }), headers: { 'x-simulator-pid': String(process.pid) } }),
      },
      {
        name: 'sim.stats',
        method: 'GET',
        path: /^\/_sim\/stats$/,
        handle: (ctx) => json(200, ctx.sim.stats.toJSON(ctx.sim.jobs.size)),
      },
      {
        name: 'sim.reset',
        method: 'POST',
        path: /^\/_sim\/reset$/,
        handle: (ctx) => {
          ctx.sim.jobs.clear(ctx.now);
          ctx.sim.responses.clear(ctx.now);
          ctx.sim.attempts.reset();
          ctx.sim.stats.reset();
          idem.clear();
          return json(200, { ok: true });
        },
      },
      {
        // Jobs whose prompt is exactly ?prompt=: how tests prove one task started one upstream job.
        name: 'sim.jobs',
        method: 'GET',
        path: /^\/_sim\/jobs$/,
        handle: (ctx) => {
          const prompt = ctx.query.get('prompt');
          const data = [...ctx.sim.jobs.all()].filter((job) => prompt === null || job.prompt === prompt).map((job) => jobView(job, ctx.now));
          return json(200, { object: 'list', data });
        },
      },
      {
        // Responses API responses held, with their status: how tests prove one background response made one upstream response.
        name: 'sim.responses',
        method: 'GET',
        path: /^\/_sim\/responses$/,
        handle: (ctx) => {
          const data = [...ctx.sim.responses.all()].map((r) => ({
            id: r.id,
            model: r.model,
            background: r.facts.background,
            status: statusOf(r, ctx.now),
            createdAt: r.facts.createdAt,
            metadata: r.echo.metadata ?? null,
          }));
          return json(200, { object: 'list', data });
        },
      },
      {
        name: 'sim.job',
        method: 'GET',
        path: /^\/_sim\/jobs\/([^/]+)$/,
        handle: (ctx) => {
          const job = ctx.sim.jobs.get(ctx.params[0] ?? '');
          if (!job) return simError(404, 'No such job');
          return json(200, jobView(job, ctx.now));
        },
      },
    ],
  };
}

function jobView(job: Job, now: number) {
  const done = now >= terminalAt(job);
  return {
    id: job.id,
    flavor: job.flavor,
    model: job.model,
    prompt: job.prompt,
    status: statusAt(job, now),
    outcome: job.outcome,
    createdAt: job.createdAt,
    completedAt: done ? terminalAt(job) : null,
    durationMs: job.durationMs,
    idempotencyKey: job.idempotencyKey,
    remixedFrom: job.remixedFrom,
    params: job.params,
  };
}

/** Paths no module claims get this plain shape. */
const fallbackModule: ProtocolModule = { name: 'unknown', prefixes: [''], upstream: false, routes: [], error: simError };

function json(status: number, body: unknown): JsonReply {
  return { kind: 'json', status, body };
}

/**
 * The upstream protocols served: the modules that imitate each provider of the gateway's
 * registry (src/providers/registry.ts). A provider without one here does not compile. Built
 * lazily (see file header).
 */
function protocolModules(): ProtocolModule[] {
  const byProvider: Record<ProviderType, readonly ProtocolModule[]> = {
    'gemini-veo': [geminiVeoModule, veoBlobModule],
    'openai-videos': [openaiVideosModule],
    'anthropic-native': [anthropicMessagesModule],
    'openai-compatible': [openaiChatModule],
    'openai-responses': [openaiResponsesModule],
  };
  return [...VIDEO_PROVIDERS, ...TEXT_PROVIDERS].flatMap((p) => byProvider[p.type]);
}

// ---------------------------------------------------------------------------------------------
// Request plumbing
// ---------------------------------------------------------------------------------------------

const MAX_BODY_BYTES = 64 * 1024 * 1024;
const HOST_HEADER = /^[A-Za-z0-9.-]+(?::\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/;

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      if (tooLarge) return; // keep draining so the 413 can be written, but stop buffering
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        tooLarge = true;
        chunks.length = 0;
        reject(new BodyError(413, `Request body exceeds ${MAX_BODY_BYTES} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks, size)));
    req.on('error', () => reject(new ClientGone()));
    req.on('close', () => {
      if (!req.complete) reject(new ClientGone());
    });
  });
}

async function parseBody(req: IncomingMessage, raw: Buffer): Promise<ParsedBody> {
  const type = (req.headers['content-type'] ?? '').toLowerCase();
  if (raw.length === 0 && !type.startsWith('multipart/')) return { kind: 'empty' };
  if (type.startsWith('application/json') || (type === '' && raw.length > 0)) {
    try {
      return { kind: 'json', value: JSON.parse(raw.toString('utf8')) as unknown };
    } catch {
      throw new BodyError(400, 'We could not parse the JSON body of your request.');
    }
  }
  if (type.startsWith('multipart/form-data') || type.startsWith('application/x-www-form-urlencoded')) {
    try {
      // Node's fetch Request implements the multipart parser; no dependency needed.
      const form = await new Request('http://simulator.invalid/', {
        method: 'POST',
        headers: { 'content-type': req.headers['content-type'] ?? '' },
        body: raw,
      }).formData();
      return { kind: 'form', form };
    } catch {
      throw new BodyError(400, 'Could not parse the multipart/form-data body.');
    }
  }
  throw new BodyError(400, `Unsupported content type '${type}'; send application/json or multipart/form-data.`);
}

function matchRoute(mod: ProtocolModule, method: string, path: string): { route: RouteDef; params: string[] } | 'wrong-method' | null {
  let pathMatched = false;
  for (const route of mod.routes) {
    const m = route.path.exec(path);
    if (!m) continue;
    if (route.method !== method) {
      pathMatched = true;
      continue;
    }
    return { route, params: m.slice(1).map((p) => (p === undefined ? '' : safeDecode(p))) };
  }
  return pathMatched ? 'wrong-method' : null;
}

/** A malformed %-escape in a path segment is kept verbatim (and then simply matches no job). */
function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function moduleFor(modules: readonly ProtocolModule[], path: string): ProtocolModule {
  let best = fallbackModule;
  let bestLen = -1;
  for (const mod of modules) {
    for (const prefix of mod.prefixes) {
      if (prefix.length > bestLen && path.startsWith(prefix)) {
        best = mod;
        bestLen = prefix.length;
      }
    }
  }
  return best;
}

function randomFaultReply(mod: ProtocolModule, kind: RandomFault): Reply {
  switch (kind) {
    case 'random-drop':
      return { kind: 'drop' };
    case 'random-429':
      return mod.error(429, 'Rate limit exceeded (simulated random fault).', { headers: { 'retry-after': '1' } });
    case 'random-500':
      return mod.error(500, 'Internal error (simulated random fault).');
    case 'random-503':
      return mod.error(503, 'Service unavailable (simulated random fault).');
  }
}

function isSuccess(reply: Reply): boolean {
  return reply.kind !== 'drop' && reply.status >= 200 && reply.status < 300;
}

function sleep(ms: number): Promise<void> {
  // unref: a pending `[sim:slow]` reply must not keep a closed simulator's process alive.
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Single `bytes=a-b` / `bytes=a-` / `bytes=-n` range; null = serve whole body; 'unsatisfiable' = 416. */
function parseRange(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | null {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null; // malformed or multi-range: RFC 9110 lets us ignore it
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || start > end) return 'unsatisfiable';
  return { start, end };
}

function writeReply(req: IncomingMessage, res: ServerResponse, reply: Reply, extra: HeaderMap, head: boolean): void {
  if (res.destroyed || res.writableEnded) return;
  if (reply.kind === 'drop') {
    req.socket.destroy();
    return;
  }
  if (reply.kind === 'stream') {
    writeStream(res, reply, extra);
    return;
  }
  const headers: HeaderMap = { ...extra, ...reply.headers };
  let status = reply.status;
  let body: Buffer;
  if (reply.kind === 'json') {
    body = Buffer.from(JSON.stringify(reply.body));
    headers['content-type'] = 'application/json; charset=utf-8';
  } else if (reply.kind === 'bytes') {
    body = reply.body;
    headers['content-type'] = reply.contentType;
    if (reply.ranges) {
      headers['accept-ranges'] = 'bytes';
      const range = parseRange(req.headers.range, body.length);
      if (range === 'unsatisfiable') {
        status = 416;
        headers['content-range'] = `bytes */${body.length}`;
        body = Buffer.alloc(0);
        delete headers['content-type'];
      } else if (range) {
        status = 206;
        headers['content-range'] = `bytes ${range.start}-${range.end}/${body.length}`;
        body = body.subarray(range.start, range.end + 1);
      }
    }
  } else {
    body = Buffer.alloc(0);
  }
  headers['content-length'] = String(body.length);
  res.writeHead(status, headers);
  res.end(head ? undefined : body);
}

function writeStream(res: ServerResponse, reply: StreamReply, extra: HeaderMap): void {
  const ac = new AbortController();
  res.on('close', () => ac.abort());
  res.writeHead(reply.status, { ...extra, ...reply.headers, 'content-type': reply.contentType, 'cache-control': 'no-cache' });
  res.flushHeaders();
  const open = (): boolean => !res.destroyed && !res.writableEnded;
  reply
    .run({
      write: (chunk) => {
        if (open()) res.write(chunk);
      },
      signal: ac.signal,
    })
    .catch(() => undefined)
    .finally(() => {
      if (open()) res.end();
    });
}

function firstOf<T>(modules: readonly ProtocolModule[], pick: (m: ProtocolModule) => T | undefined): T | undefined {
  for (const m of modules) {
    const found = pick(m);
    if (found !== undefined) return found;
  }
  return undefined;
}

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

// ---------------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------------

export async function startSimulator(opts: SimulatorOptions): Promise<RunningSimulator> {
  const options: ResolvedOptions = {
    jobMs: Math.min(MAX_JOB_MS, Math.max(0, opts.jobMs)),
    faultRate: Math.min(1, Math.max(0, opts.faultRate ?? 0)),
    latencyMs: Math.max(0, opts.latencyMs ?? 0),
    apiKey: opts.apiKey,
  };
  // Fixed, not per process: a blob URL handed out before a restart still works after it.
  const secret = createHash('sha256')
    .update(`provider-simulator/blob-urls/${opts.apiKey ?? ''}`)
    .digest();
  const upstream = protocolModules();
  const sim: SimState = {
    options,
    jobs: new JobStore({
      job: (id) => firstOf(upstream, (m) => m.recoverJob?.(id)),
      character: (id) => firstOf(upstream, (m) => m.recoverCharacter?.(id)),
    }),
    responses: new ResponseStore(),
    attempts: new AttemptCounters(),
    stats: new Stats(),
    sign: (value) => createHmac('sha256', secret).update(value).digest('base64url').slice(0, 32),
  };
  const idem = new IdempotencyStore();
  const modules = [...upstream, introspectionModule(idem)];
  let selfUrl = '';

  async function dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawUrl = req.url ?? '/';
    const q = rawUrl.indexOf('?');
    const path = q < 0 ? rawUrl : rawUrl.slice(0, q);
    const query = new URLSearchParams(q < 0 ? '' : rawUrl.slice(q + 1));
    const head = req.method === 'HEAD';
    const method = head ? 'GET' : (req.method ?? 'GET');
    const mod = moduleFor(modules, path);
    const extra = mod.responseHeaders?.() ?? {};
    const match = matchRoute(mod, method, path);
    const routeName = match && match !== 'wrong-method' ? match.route.name : `${mod.name}.unmatched`;
    sim.stats.request(routeName);

    const hostHeader = req.headers.host;
    let bodyPromise: Promise<Buffer> | undefined;
    const ctx: Ctx = {
      req,
      method,
      path,
      query,
      sim,
      params: match && match !== 'wrong-method' ? match.params : [],
      route: routeName,
      now: Date.now(),
      baseUrl: hostHeader && HOST_HEADER.test(hostHeader) ? `http://${hostHeader}` : selfUrl,
      header: (name) => {
        const v = req.headers[name.toLowerCase()];
        return Array.isArray(v) ? v[0] : v;
      },
      rawBody: () => (bodyPromise ??= readBody(req)),
      body: async () => parseBody(req, await ctx.rawBody()),
      error: (status, message, detail) => mod.error(status, message, detail),
    };

    let reply: Reply | undefined;
    let idemKey: string | undefined;
    try {
      const rf = mod.upstream ? randomFault(options.faultRate) : null;
      if (rf) {
        sim.stats.fault(rf);
        reply = randomFaultReply(mod, rf);
      } else if (match === null) {
        reply = mod.error(404, `Unknown route: ${method} ${path}`);
      } else if (match === 'wrong-method') {
        reply = mod.error(405, `Method ${method} is not allowed on ${path}`);
      } else {
        const { route } = match;
        if (mod.upstream && route.auth !== false && mod.authenticate) reply = mod.authenticate(ctx) ?? undefined;
        const key = route.idempotent ? ctx.header('idempotency-key') : undefined;
        if (!reply && key) {
          idemKey = `${method} ${path}\n${key}`;
          const prior = idem.get(idemKey);
          if (prior) {
            reply = { ...prior, delayMs: 0, headers: { ...prior.headers, 'idempotent-replayed': 'true' } };
            idemKey = undefined;
          } else if (idem.isInFlight(idemKey)) {
            reply = mod.error(409, 'A request with this Idempotency-Key is still in progress.', { code: 'idempotency_key_in_use' });
            idemKey = undefined;
          } else {
            idem.begin(idemKey);
          }
        }
        if (!reply) {
          reply = await route.handle(ctx);
          if (idemKey) {
            const toRecord = reply.kind === 'drop' ? reply.created : reply;
            if (toRecord && isSuccess(toRecord)) idem.record(idemKey, { ...toRecord, delayMs: 0 });
          }
        }
      }
    } catch (err) {
      if (err instanceof ClientGone) return;
      reply = err instanceof BodyError ? mod.error(err.status, err.message) : mod.error(500, 'Internal simulator error');
    } finally {
      if (idemKey) idem.end(idemKey);
    }

    const final: Reply = reply ?? mod.error(500, 'Internal simulator error');
    const delay = (mod.upstream ? options.latencyMs : 0) + (final.delayMs ?? 0);
    if (delay > 0) await sleep(delay);
    writeReply(req, res, final, extra, head);
  }

  const server = http.createServer((req, res) => {
    // A writing error just means the client left; never let it become an uncaught exception.
    res.on('error', () => undefined);
    dispatch(req, res).catch(() => {
      if (!res.headersSent && !res.destroyed) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"Internal simulator error"}}');
      }
    });
  });
  // Lots of concurrent pollers reuse connections; keep idle sockets a little longer than clients'.
  server.keepAliveTimeout = 10_000;
  server.on('clientError', (_err: Error, socket: Socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    else socket.destroy();
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : (opts.port ?? 0);
  selfUrl = `http://${urlHost(opts.host ?? '127.0.0.1')}:${port}`;

  let closing: Promise<void> | undefined;
  return {
    url: selfUrl,
    port,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Idle keep-alive and in-flight sockets would otherwise hold close() (and test runs) open.
        server.closeAllConnections();
      })),
  };
}
