/**
 * OpenAI-style Videos API (the format many OpenAI-videos-compatible providers speak): create,
 * retrieve, list, delete, content download, remix and characters. Accepts the union of what the
 * compatible providers accept (extra `seconds` and `size` values); everything else is validated as
 * strictly as OpenAI does, so a gateway bug shows up as a 400 here rather than in production.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Ctx, ErrorDetail, HeaderMap, ProtocolModule, Reply } from './server';
import { newJob, progressAt, recoveredJob, statusAt, terminalAt, isTerminal, type Character, type Job } from './jobs';
import { characterId, openAiVideoId, readCharacterId, readOpenAiVideoId } from './job-ids';
import { countOutcome, finishCreate, gateContent, gatePoll, gateSubmit, parseMarkers } from './faults';
import { looksLikeMp4, PROFILE_PNG, SAMPLE_MP4, sampleVideo, sniffImage, SPRITESHEET_JPEG, THUMBNAIL_PNG } from './assets';

const MODELS = ['sora-2', 'sora-2-pro'] as const;
const SECONDS = ['4', '8', '10', '12', '15', '25'] as const;
const SIZES = ['720x1280', '1280x720', '1024x1792', '1792x1024', '480x480', '1080x1080'] as const;
/** How long completed assets stay downloadable, reported in `expires_at`. */
const ASSET_TTL_SECONDS = 24 * 3600;

const prompt = z.string().min(1).max(32000);
// Multipart sends every field as a string; some JSON clients send seconds as a number.
const seconds = z.preprocess((v) => (typeof v === 'number' ? String(v) : v), z.enum(SECONDS));

// Compatible-provider extensions arrive as "true"/"false" in multipart, booleans in JSON.
const boolish = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]);
const characterIds = z.array(z.string().min(1)).max(5);

const createSchema = z.strictObject({
  prompt,
  model: z.enum(MODELS).optional(),
  seconds: seconds.optional(),
  size: z.enum(SIZES).optional(),
  input_reference: z.unknown().optional(), // checked by checkInputReference (file or image_url)
  // Extensions some OpenAI-videos-compatible providers accept (the gateway sends them to channels
  // configured with send_extensions): watermark, private, and characters to cast.
  watermark: boolish.optional(),
  private: boolish.optional(),
  'characters[]': characterIds.optional(),
  characters: characterIds.optional(),
  style: z.string().min(1).max(100).optional(),
  // A JSON object: as a string in multipart, as an object in JSON.
  metadata: z
    .union([
      z.record(z.string(), z.unknown()),
      z.string().transform((v, ctx) => {
        try {
          const parsed: unknown = JSON.parse(v);
          if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
        } catch {
          // reported below
        }
        ctx.addIssue({ code: 'custom', message: 'metadata must be a JSON object' });
        return z.NEVER;
      }),
    ])
    .optional(),
});
// size: an extension of compatible providers (the gateway sends it when a remix overrides the size).
const remixSchema = z.strictObject({ prompt, size: z.enum(SIZES).optional() });
const characterSchema = z.strictObject({
  name: z.string().min(1).max(80),
  video: z.instanceof(Uint8Array),
  // Extension: which part of the clip shows the character, e.g. "1.5-4".
  timestamps: z.string().min(1).max(200).optional(),
  // Extension: the character is the caller's own likeness (a "cameo").
  self_portrait: boolish.optional(),
});
const listSchema = z.object({
  after: z.string().min(1).optional(),
  limit: z.coerce.number().int().min(0).max(100).optional(),
  order: z.enum(['asc', 'desc']).optional(),
});
const variantSchema = z.enum(['video', 'thumbnail', 'spritesheet']);

// ---------------------------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------------------------

function errorType(status: number): string {
  if (status === 429) return 'requests';
  return status >= 500 ? 'server_error' : 'invalid_request_error';
}

function openaiError(status: number, message: string, detail?: ErrorDetail): Reply {
  const code = detail?.code !== undefined ? detail.code : status === 429 ? 'rate_limit_exceeded' : null;
  return {
    kind: 'json',
    status,
    body: { error: { message, type: errorType(status), param: detail?.param ?? null, code } },
    headers: detail?.headers,
  };
}

/** 32 random hex chars. randomUUID draws from a cached entropy pool, far cheaper per call than randomBytes. */
function hex32(): string {
  return randomUUID().replace(/-/g, '');
}

function json(status: number, body: unknown): Reply {
  return { kind: 'json', status, body };
}

const seconds1000 = (ms: number): number => Math.floor(ms / 1000);

/** The Video object: every key present, nullable ones null. */
export function toVideo(job: Job, now: number): Record<string, unknown> {
  const status = statusAt(job, now);
  const done = seconds1000(terminalAt(job));
  return {
    id: job.id,
    object: 'video',
    model: job.model,
    status,
    progress: progressAt(job, now),
    created_at: seconds1000(job.createdAt),
    completed_at: status === 'completed' || status === 'failed' ? done : null,
    expires_at: status === 'completed' ? done + ASSET_TTL_SECONDS : null,
    prompt: job.prompt,
    seconds: job.seconds,
    size: job.size,
    remixed_from_video_id: job.remixedFrom,
    error: status === 'failed' ? { code: 'generation_failed', message: 'Video generation failed (simulated by a [sim:fail] or [sim:filtered] marker).' } : null,
  };
}

// ---------------------------------------------------------------------------------------------
// Input
// ---------------------------------------------------------------------------------------------

type Input = Record<string, unknown>;
type Read = { ok: true; input: Input } | { ok: false; reply: Reply };

/** JSON object or multipart fields; uploaded files become Uint8Array values. */
async function readInput(ctx: Ctx): Promise<Read> {
  const body = await ctx.body();
  if (body.kind === 'empty') return { ok: true, input: {} };
  if (body.kind === 'json') {
    const v = body.value;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) {
      return { ok: false, reply: ctx.error(400, 'The request body must be a JSON object.') };
    }
    return { ok: true, input: v as Input };
  }
  const input: Input = {};
  for (const [key, raw] of body.form) {
    const value = typeof raw === 'string' ? raw : new Uint8Array(await raw.arrayBuffer());
    const prior = input[key];
    // `name[]` fields are lists by convention; any other repeated field becomes a list too,
    // which the schema then rejects for scalar parameters.
    if (Array.isArray(prior)) prior.push(value);
    else if (prior !== undefined) input[key] = [prior, value];
    else input[key] = key.endsWith('[]') ? [value] : value;
  }
  return { ok: true, input };
}

/** Maps the first zod issue to OpenAI's error wording and `param`/`code` conventions. */
function zodError(ctx: Ctx, error: z.ZodError, input: Input): Reply {
  const issue = error.issues[0];
  if (!issue) return ctx.error(400, 'Invalid request.');
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    return ctx.error(400, `Unknown parameter: '${key}'.`, { param: key, code: 'unknown_parameter' });
  }
  const param = String(issue.path[0] ?? '');
  if (input[param] === undefined) {
    return ctx.error(400, `Missing required parameter: '${param}'.`, { param, code: 'missing_required_parameter' });
  }
  if (issue.code === 'invalid_value') {
    const allowed = issue.values.map((v) => `'${String(v)}'`).join(', ');
    return ctx.error(400, `Invalid value: '${String(input[param])}'. Supported values are: ${allowed}.`, { param, code: 'invalid_value' });
  }
  return ctx.error(400, `Invalid '${param}': ${issue.message}.`, { param, code: 'invalid_value' });
}

const DATA_URL = /^data:([^;,]*)(;base64)?,(.*)$/s;

/** input_reference: an uploaded image file, or in JSON `{image_url: "data:image/...;base64,..."}`. */
function checkInputReference(ctx: Ctx, value: unknown): Reply | string | null {
  if (value === undefined) return null;
  const bad = (message: string): Reply => ctx.error(400, message, { param: 'input_reference', code: 'invalid_value' });
  let bytes: Uint8Array | undefined;
  if (value instanceof Uint8Array) {
    bytes = value;
  } else if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const ref = value as { image_url?: unknown; file_id?: unknown };
    if (ref.file_id !== undefined) return bad('input_reference.file_id is not supported by the simulator; upload the image instead.');
    const m = typeof ref.image_url === 'string' ? DATA_URL.exec(ref.image_url) : null;
    if (!m || m[2] === undefined) {
      return bad('input_reference.image_url must be a base64 data URL (the simulator has no network access).');
    }
    bytes = Buffer.from(m[3] ?? '', 'base64');
  } else {
    return bad('input_reference must be an image file.');
  }
  return sniffImage(bytes) ?? bad('Invalid input_reference: the file is not a PNG, JPEG, WEBP or GIF image.');
}

// ---------------------------------------------------------------------------------------------
// Handlers
// ---------------------------------------------------------------------------------------------

interface VideoSpec {
  model: string;
  seconds: string;
  size: string;
  remixedFrom: string | null;
  /** What the request asked for, shown by /_sim/jobs so gateway tests can assert on it. */
  params: Record<string, unknown>;
}

/** The shared tail of create and remix: fault gates, content policy, job creation. */
function submitVideo(ctx: Ctx, text: string, spec: VideoSpec): Reply {
  const markers = parseMarkers(text);
  const gate = gateSubmit(ctx, text, markers);
  if ('reply' in gate) return gate.reply;
  if (markers.reject) {
    ctx.sim.stats.fault('reject');
    return ctx.error(
      400,
      'Your request was rejected as a result of our safety system: the prompt may violate the content policy (simulated by [sim:reject]).',
      { code: 'content_policy_violation' },
    );
  }
  const job = newJob({
    makeId: (j) =>
      ctx.sim.jobs.freshId(() =>
        openAiVideoId({
          createdAt: j.createdAt,
          durationMs: j.durationMs,
          outcome: j.outcome,
          model: tableIndex(MODELS, spec.model),
          seconds: tableIndex(SECONDS, spec.seconds),
          size: tableIndex(SIZES, spec.size),
        }),
      ),
    flavor: 'openai',
    model: spec.model,
    prompt: text,
    now: ctx.now,
    defaultJobMs: ctx.sim.options.jobMs,
    markers,
    idempotencyKey: ctx.header('idempotency-key') ?? null,
    remixedFrom: spec.remixedFrom,
    seconds: spec.seconds,
    size: spec.size,
    params: spec.params,
  });
  ctx.sim.jobs.add(job);
  ctx.sim.stats.jobCreated('openai');
  countOutcome(ctx, job);
  return finishCreate(ctx, markers, json(200, toVideo(job, ctx.now)), gate.dropAfterCreate);
}

async function createVideo(ctx: Ctx): Promise<Reply> {
  const read = await readInput(ctx);
  if (!read.ok) return read.reply;
  const parsed = createSchema.safeParse(read.input);
  if (!parsed.success) return zodError(ctx, parsed.error, read.input);
  const reference = checkInputReference(ctx, parsed.data.input_reference);
  if (reference !== null && typeof reference !== 'string') return reference;
  const d = parsed.data;
  const characters = [...(d['characters[]'] ?? []), ...(d.characters ?? [])];
  const unknown = characters.find((id) => !ctx.sim.jobs.getCharacter(id));
  if (unknown !== undefined) {
    return ctx.error(400, `Character with id '${unknown}' not found.`, { param: 'characters', code: 'character_not_found' });
  }
  const spec: VideoSpec = {
    model: d.model ?? 'sora-2',
    seconds: d.seconds ?? '4',
    size: d.size ?? '720x1280',
    remixedFrom: null,
    params: { inputReference: reference },
  };
  if (d.watermark !== undefined) spec.params.watermark = d.watermark;
  if (d.private !== undefined) spec.params.private = d.private;
  if (characters.length > 0) spec.params.characters = characters;
  if (d.style !== undefined) spec.params.style = d.style;
  if (d.metadata !== undefined) spec.params.metadata = d.metadata;
  return submitVideo(ctx, d.prompt, spec);
}

function tableIndex(table: readonly string[], value: string): number {
  const i = table.indexOf(value);
  if (i < 0) throw new Error(`'${value}' is not in the table of the video id`);
  return i;
}

/** A video of an earlier simulator process, from its id (job-ids.ts). */
function recoverVideo(id: string): Job | undefined {
  const f = readOpenAiVideoId(id);
  const model = f ? MODELS[f.model] : undefined;
  const seconds = f ? SECONDS[f.seconds] : undefined;
  const size = f ? SIZES[f.size] : undefined;
  if (!f || !model || !seconds || !size) return undefined;
  return recoveredJob({ id, flavor: 'openai', model, createdAt: f.createdAt, durationMs: f.durationMs, outcome: f.outcome, seconds, size, sampleCount: 1 });
}

function recoverCharacter(id: string): Character | undefined {
  const f = readCharacterId(id);
  return f ? { id, name: null, createdAt: f.createdAt, selfPortrait: f.selfPortrait } : undefined;
}

function findVideo(ctx: Ctx, id: string): Job | Reply {
  const job = ctx.sim.jobs.get(id);
  if (job && job.flavor === 'openai') return job;
  return ctx.error(404, `Video with id '${id}' not found.`, { param: 'video_id', code: 'video_not_found' });
}

const isJob = (v: Job | Reply): v is Job => 'flavor' in v;

async function remixVideo(ctx: Ctx): Promise<Reply> {
  const source = findVideo(ctx, ctx.params[0] ?? '');
  if (!isJob(source)) return source;
  const read = await readInput(ctx);
  if (!read.ok) return read.reply;
  const parsed = remixSchema.safeParse(read.input);
  if (!parsed.success) return zodError(ctx, parsed.error, read.input);
  const status = statusAt(source, ctx.now);
  if (status !== 'completed') {
    return ctx.error(400, `Video '${source.id}' is ${status}; only completed videos can be remixed.`, { param: 'video_id', code: 'invalid_video_state' });
  }
  return submitVideo(ctx, parsed.data.prompt, {
    model: source.model ?? MODELS[0], // an OpenAI-style job always has its model
    seconds: source.seconds ?? '4',
    size: parsed.data.size ?? source.size,
    remixedFrom: source.id,
    params: parsed.data.size ? { size: parsed.data.size } : {},
  });
}

function retrieveVideo(ctx: Ctx): Reply {
  const job = findVideo(ctx, ctx.params[0] ?? '');
  if (!isJob(job)) return job;
  return gatePoll(ctx, job) ?? json(200, toVideo(job, ctx.now));
}

function listVideos(ctx: Ctx): Reply {
  const parsed = listSchema.safeParse(Object.fromEntries(ctx.query));
  if (!parsed.success) {
    const param = parsed.error.issues[0]?.path.map(String).join('.') ?? '';
    return ctx.error(400, `Invalid '${param}': ${parsed.error.issues[0]?.message ?? 'invalid value'}.`, { param, code: 'invalid_value' });
  }
  const { after, limit = 20, order = 'desc' } = parsed.data;
  const all: Job[] = [];
  for (const job of ctx.sim.jobs.all()) if (job.flavor === 'openai') all.push(job);
  if (order === 'desc') all.reverse();
  const start = after === undefined ? 0 : all.findIndex((j) => j.id === after) + 1;
  // An unknown cursor yields an empty page rather than restarting from the top.
  const from = after !== undefined && start === 0 ? all.length : start;
  const page = all.slice(from, from + limit);
  return json(200, {
    object: 'list',
    data: page.map((j) => toVideo(j, ctx.now)),
    first_id: page[0]?.id ?? null,
    last_id: page[page.length - 1]?.id ?? null,
    has_more: from + page.length < all.length,
  });
}

function deleteVideo(ctx: Ctx): Reply {
  const job = findVideo(ctx, ctx.params[0] ?? '');
  if (!isJob(job)) return job;
  // OpenAI deletes "a completed or failed video and its stored assets"; a running job cannot be,
  // unless it was made with [sim:cancellable] (a compatible provider that cancels on DELETE).
  if (!isTerminal(job, ctx.now) && !job.cancellable) {
    return ctx.error(400, `Video '${job.id}' is ${statusAt(job, ctx.now)}; only completed or failed videos can be deleted.`, {
      param: 'video_id',
      code: 'invalid_video_state',
    });
  }
  ctx.sim.jobs.delete(job.id);
  return json(200, { id: job.id, object: 'video.deleted', deleted: true });
}

const VARIANTS: Record<z.infer<typeof variantSchema>, { body: Buffer; type: string }> = {
  video: { body: SAMPLE_MP4, type: 'video/mp4' },
  thumbnail: { body: THUMBNAIL_PNG, type: 'image/png' },
  spritesheet: { body: SPRITESHEET_JPEG, type: 'image/jpeg' },
};

function downloadContent(ctx: Ctx): Reply {
  const job = findVideo(ctx, ctx.params[0] ?? '');
  if (!isJob(job)) return job;
  const variant = variantSchema.safeParse(ctx.query.get('variant') ?? 'video');
  if (!variant.success) {
    return ctx.error(400, `Invalid value: '${ctx.query.get('variant') ?? ''}'. Supported values are: 'video', 'thumbnail', 'spritesheet'.`, {
      param: 'variant',
      code: 'invalid_value',
    });
  }
  const fault = gateContent(ctx, job);
  if (fault) return fault;
  const status = statusAt(job, ctx.now);
  if (status !== 'completed') {
    const why = status === 'failed' ? 'failed, so it has no content' : `not ready yet (status ${status})`;
    return ctx.error(404, `Video '${job.id}' is ${why}. Poll GET /v1/videos/${job.id} until status is completed.`, { code: 'video_not_ready' });
  }
  const asset = VARIANTS[variant.data];
  const body = variant.data === 'video' ? sampleVideo(job.videoKib) : asset.body;
  return { kind: 'bytes', status: 200, body, contentType: asset.type, ranges: true };
}

function characterView(c: Character): Record<string, unknown> {
  // self_portrait is shown only when set, so plain OpenAI-shaped answers stay exact.
  return { id: c.id, name: c.name, created_at: seconds1000(c.createdAt), ...(c.selfPortrait ? { self_portrait: true } : {}) };
}

async function createCharacter(ctx: Ctx): Promise<Reply> {
  const read = await readInput(ctx);
  if (!read.ok) return read.reply;
  const parsed = characterSchema.safeParse(read.input);
  if (!parsed.success) return zodError(ctx, parsed.error, read.input);
  const { name, video } = parsed.data;
  if (!looksLikeMp4(video)) {
    return ctx.error(400, 'Invalid video: the file is not an MP4 (no ftyp box).', { param: 'video', code: 'invalid_value' });
  }
  const markers = parseMarkers(name);
  const gate = gateSubmit(ctx, name, markers);
  if ('reply' in gate) return gate.reply;
  if (markers.reject) {
    ctx.sim.stats.fault('reject');
    return ctx.error(400, 'Your request was rejected as a result of our safety system (simulated by [sim:reject]).', { code: 'content_policy_violation' });
  }
  const selfPortrait = parsed.data.self_portrait ?? false;
  const id = ctx.sim.jobs.freshId(() => characterId({ createdAt: ctx.now, selfPortrait }));
  const character: Character = { id, name, createdAt: ctx.now, selfPortrait };
  ctx.sim.jobs.addCharacter(character);
  ctx.sim.stats.charactersCreated += 1;
  return finishCreate(ctx, markers, json(200, characterView(character)), gate.dropAfterCreate);
}

function getCharacter(ctx: Ctx, picture: boolean): Reply {
  const id = ctx.params[0] ?? '';
  const c = ctx.sim.jobs.getCharacter(id);
  if (!c) return ctx.error(404, `Character with id '${id}' not found.`, { param: 'character_id', code: 'character_not_found' });
  if (picture) return { kind: 'bytes', status: 200, body: PROFILE_PNG, contentType: 'image/png' };
  return json(200, characterView(c));
}

function authenticate(ctx: Ctx): Reply | null {
  const header = ctx.header('authorization') ?? '';
  const m = /^Bearer\s+(\S.*)$/i.exec(header);
  const key = m?.[1]?.trim();
  if (!key) {
    return ctx.error(
      401,
      "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
    );
  }
  const expected = ctx.sim.options.apiKey;
  if (expected !== undefined && key !== expected) {
    const masked = key.length > 8 ? `${key.slice(0, 3)}***${key.slice(-4)}` : '***';
    return ctx.error(401, `Incorrect API key provided: ${masked}.`, { code: 'invalid_api_key' });
  }
  return null;
}

const V = '/v1/videos';
export const openaiVideosModule: ProtocolModule = {
  name: 'openai',
  prefixes: ['/v1/'],
  upstream: true,
  error: openaiError,
  authenticate,
  recoverJob: recoverVideo,
  recoverCharacter,
  responseHeaders: (): HeaderMap => ({ 'x-request-id': `req_${hex32()}` }),
  // Order matters: the characters routes must win over /v1/videos/{id}.
  routes: [
    { name: 'openai.videos.create', method: 'POST', path: /^\/v1\/videos$/, idempotent: true, handle: createVideo },
    { name: 'openai.videos.list', method: 'GET', path: /^\/v1\/videos$/, handle: listVideos },
    { name: 'openai.characters.create', method: 'POST', path: new RegExp(`^${V}/characters$`), idempotent: true, handle: createCharacter },
    { name: 'openai.characters.picture', method: 'GET', path: new RegExp(`^${V}/characters/([^/]+)/profile_picture$`), handle: (c) => getCharacter(c, true) },
    { name: 'openai.characters.get', method: 'GET', path: new RegExp(`^${V}/characters/([^/]+)$`), handle: (c) => getCharacter(c, false) },
    { name: 'openai.videos.content', method: 'GET', path: new RegExp(`^${V}/([^/]+)/content$`), handle: downloadContent },
    { name: 'openai.videos.remix', method: 'POST', path: new RegExp(`^${V}/([^/]+)/remix$`), idempotent: true, handle: remixVideo },
    { name: 'openai.videos.get', method: 'GET', path: new RegExp(`^${V}/([^/]+)$`), handle: retrieveVideo },
    { name: 'openai.videos.delete', method: 'DELETE', path: new RegExp(`^${V}/([^/]+)$`), handle: deleteVideo },
  ],
};
