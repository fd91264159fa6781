/**
 * Veo through the Gemini API: predictLongRunning -> operation polling -> file download. Errors use
 * Google's `{"error":{"code","message","status"}}` shape. Request bodies are validated strictly
 * (unknown fields are a 400, as with Google's JSON->proto mapping) so gateway mistakes surface here.
 *
 * Downloads mimic Google's indirection: the sample's uri needs the API key and answers a redirect
 * to a signed storage URL (served by `veoBlobModule` under /_sim/blobs, which needs no key), so
 * clients must follow redirects and must not need to send the key to the storage host.
 */
import { z } from 'zod';
import type { Ctx, ErrorDetail, ProtocolModule, Reply } from './server';
import { isTerminal, newJob, recoveredJob, type Job } from './jobs';
import { modelHash, readVeoOperationId, veoOperationId } from './job-ids';
import { countOutcome, finishCreate, gateContent, gatePoll, gateSubmit, parseMarkers } from './faults';
import { sampleVideo, sniffImage } from './assets';

const RESPONSE_TYPE = 'type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse';
const MODEL = /^veo-[A-Za-z0-9.-]+$/;

// Both image encodings seen in the wild: the SDK's and the REST docs'.
const imageSchema = z.union([
  z.strictObject({ bytesBase64Encoded: z.string().min(1), mimeType: z.string().optional() }),
  z.strictObject({ inlineData: z.strictObject({ mimeType: z.string().optional(), data: z.string().min(1) }) }),
]);
type ImageInput = z.infer<typeof imageSchema>;

// Google's JSON mapping accepts integers as numbers or numeric strings.
const int = (min: number, max: number) => z.preprocess((v) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v), z.number().int().min(min).max(max));

const createSchema = z.strictObject({
  instances: z
    .array(
      z.strictObject({
        prompt: z.string().min(1),
        image: imageSchema.optional(),
        lastFrame: imageSchema.optional(),
        referenceImages: z
          .array(
            z.strictObject({
              image: imageSchema,
              referenceType: z.enum(['asset', 'style']).optional(),
            }),
          )
          .max(3, 'at most 3 referenceImages are supported')
          .optional(),
      }),
    )
    .length(1, 'exactly one instance is supported'),
  parameters: z
    .strictObject({
      aspectRatio: z.enum(['16:9', '9:16']).optional(),
      durationSeconds: int(4, 8).optional(),
      resolution: z.enum(['720p', '1080p', '4k']).optional(),
      enhancePrompt: z.boolean().optional(),
      negativePrompt: z.string().optional(),
      personGeneration: z.enum(['allow_all', 'allow_adult', 'dont_allow']).optional(),
      sampleCount: int(1, 4).optional(),
      seed: z.number().int().optional(),
    })
    .optional(),
});

const GOOGLE_STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  405: 'NOT_FOUND',
  409: 'ABORTED',
  413: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
};

function googleError(status: number, message: string, detail?: ErrorDetail): Reply {
  const name = GOOGLE_STATUS[status] ?? (status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT');
  return { kind: 'json', status, body: { error: { code: status, message, status: name } }, headers: detail?.headers };
}

function opName(model: string, job: Job): string {
  return `models/${model}/operations/${job.id}`;
}

/** The job's model is `model` (for a job recovered from its id: by the hash the id carries). */
function sameModel(job: Job, model: string): boolean {
  return job.model === model || (job.model === null && job.modelHash === modelHash(model));
}

/** An operation of an earlier simulator process, from its id (job-ids.ts). */
function recoverOperation(id: string): Job | undefined {
  const f = readVeoOperationId(id);
  if (!f) return undefined;
  return recoveredJob({
    id,
    flavor: 'veo',
    model: null,
    modelHash: f.modelHash,
    createdAt: f.createdAt,
    durationMs: f.durationMs,
    outcome: f.outcome,
    seconds: f.durationSeconds === null ? null : String(f.durationSeconds),
    size: f.aspect === 1 ? '9:16' : '16:9',
    sampleCount: f.sampleCount,
  });
}

/** Sample i of operation `opId` is file `${opId}-${i}`. */
function fileId(job: Job, index: number): string {
  return `${job.id}-${index}`;
}

/** The job and sample index behind a file id, when the file exists (job completed successfully). */
function findFile(ctx: Ctx, id: string): { job: Job; index: number } | null {
  const dash = id.lastIndexOf('-');
  if (dash <= 0) return null;
  const job = ctx.sim.jobs.get(id.slice(0, dash));
  const index = Number(id.slice(dash + 1));
  if (!job || job.flavor !== 'veo' || !Number.isInteger(index) || index < 0 || index >= job.sampleCount) return null;
  return { job, index };
}

function fileReady(ctx: Ctx, job: Job): boolean {
  return job.outcome === 'success' && isTerminal(job, ctx.now);
}

/** The operation resource as Google returns it; no progress field exists, so none is invented. */
function operation(ctx: Ctx, model: string, job: Job): Record<string, unknown> {
  const name = opName(model, job);
  if (!isTerminal(job, ctx.now)) return { name, done: false };
  if (job.outcome === 'fail') {
    return { name, done: true, error: { code: 13, message: 'Video generation failed due to an internal error (simulated by [sim:fail]).' } };
  }
  if (job.outcome === 'filtered') {
    return {
      name,
      done: true,
      response: {
        '@type': RESPONSE_TYPE,
        generateVideoResponse: {
          raiMediaFilteredCount: 1,
          raiMediaFilteredReasons: ['The generated video was filtered by responsible-AI safety filters (simulated by [sim:filtered]).'],
        },
      },
    };
  }
  const generatedSamples = Array.from({ length: job.sampleCount }, (_, i) => ({
    video: { uri: `${ctx.baseUrl}/v1beta/files/${fileId(job, i)}:download?alt=media` },
  }));
  return { name, done: true, response: { '@type': RESPONSE_TYPE, generateVideoResponse: { generatedSamples } } };
}

function imageBytes(img: ImageInput): Buffer {
  return Buffer.from('inlineData' in img ? img.inlineData.data : img.bytesBase64Encoded, 'base64');
}

function unknownModel(ctx: Ctx, model: string, method: string): Reply {
  return ctx.error(
    404,
    `models/${model} is not found for API version v1beta, or is not supported for ${method}. Call ListModels to see the list of available models and their supported methods.`,
  );
}

async function predictLongRunning(ctx: Ctx): Promise<Reply> {
  const model = ctx.params[0] ?? '';
  if (!MODEL.test(model)) return unknownModel(ctx, model, 'predictLongRunning');
  const body = await ctx.body();
  if (body.kind !== 'json') return ctx.error(400, 'Invalid JSON payload received: send a JSON object with content-type application/json.');
  const parsed = createSchema.safeParse(body.value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.map(String).join('.') ?? '';
    const message =
      issue?.code === 'unrecognized_keys'
        ? `Invalid JSON payload received. Unknown name "${issue.keys[0] ?? ''}"${where ? ` at '${where}'` : ''}: Cannot find field.`
        : `Invalid value at '${where || 'request'}': ${issue?.message ?? 'invalid request'}.`;
    return ctx.error(400, message);
  }
  const { instances, parameters = {} } = parsed.data;
  const instance = instances[0];
  if (!instance) return ctx.error(400, 'instances must not be empty.');
  const images: Array<[string, ImageInput]> = [];
  if (instance.image) images.push(['instances[0].image', instance.image]);
  if (instance.lastFrame) images.push(['instances[0].lastFrame', instance.lastFrame]);
  instance.referenceImages?.forEach((r, i) => images.push([`instances[0].referenceImages[${i}].image`, r.image]));
  const kinds: string[] = [];
  for (const [where, img] of images) {
    const kind = sniffImage(imageBytes(img));
    if (!kind) return ctx.error(400, `Unable to process input image at '${where}': the bytes are not a PNG, JPEG, WEBP or GIF image.`);
    kinds.push(kind);
  }

  const prompt = instance.prompt;
  const markers = parseMarkers(prompt);
  const gate = gateSubmit(ctx, prompt, markers);
  if ('reply' in gate) return gate.reply;
  if (markers.reject) {
    ctx.sim.stats.fault('reject');
    return ctx.error(400, "The prompt could not be submitted: it violates Google's Responsible AI practices (simulated by [sim:reject]).");
  }
  const aspect = parameters.aspectRatio ?? '16:9';
  const job = newJob({
    makeId: (j) =>
      ctx.sim.jobs.freshId(() =>
        veoOperationId({
          createdAt: j.createdAt,
          durationMs: j.durationMs,
          outcome: j.outcome,
          sampleCount: j.sampleCount,
          aspect: aspect === '9:16' ? 1 : 0,
          durationSeconds: parameters.durationSeconds ?? null,
          modelHash: modelHash(model),
        }),
      ),
    flavor: 'veo',
    model,
    prompt,
    now: ctx.now,
    defaultJobMs: ctx.sim.options.jobMs,
    markers,
    idempotencyKey: ctx.header('idempotency-key') ?? null,
    seconds: parameters.durationSeconds === undefined ? null : String(parameters.durationSeconds),
    size: aspect,
    sampleCount: parameters.sampleCount ?? 1,
    // What reached the "provider", for gateway tests: parameters plus which images (by sniffed type).
    params: {
      ...parameters,
      image: instance.image ? kinds[0] : null,
      lastFrame: instance.lastFrame ? kinds[instance.image ? 1 : 0] : null,
      referenceImages: (instance.referenceImages ?? []).map((r) => r.referenceType ?? null),
    },
  });
  ctx.sim.jobs.add(job);
  ctx.sim.stats.jobCreated('veo');
  countOutcome(ctx, job);
  return finishCreate(ctx, markers, { kind: 'json', status: 200, body: { name: opName(model, job) } }, gate.dropAfterCreate);
}

function getOperation(ctx: Ctx): Reply {
  const [model = '', opId = ''] = ctx.params;
  const job = ctx.sim.jobs.get(opId);
  if (!job || job.flavor !== 'veo' || !sameModel(job, model)) {
    return ctx.error(404, `Operation models/${model}/operations/${opId} not found.`);
  }
  return gatePoll(ctx, job) ?? { kind: 'json', status: 200, body: operation(ctx, model, job) };
}

function downloadFile(ctx: Ctx): Reply {
  const id = ctx.params[0] ?? '';
  const file = findFile(ctx, id);
  if (!file) return ctx.error(404, `File files/${id} not found.`);
  const fault = gateContent(ctx, file.job);
  if (fault) return fault;
  if (!fileReady(ctx, file.job)) return ctx.error(404, `File files/${id} not found.`);
  return {
    kind: 'empty',
    status: 302,
    headers: { location: `${ctx.baseUrl}/_sim/blobs/${id}.mp4?sig=${ctx.sim.sign(id)}` },
  };
}

function authenticate(ctx: Ctx): Reply | null {
  const key = ctx.header('x-goog-api-key') ?? ctx.query.get('key') ?? '';
  if (key === '') {
    return ctx.error(
      403,
      "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
    );
  }
  const expected = ctx.sim.options.apiKey;
  if (expected !== undefined && key !== expected) {
    return ctx.error(403, 'API key not valid. Please pass a valid API key.');
  }
  return null;
}

export const geminiVeoModule: ProtocolModule = {
  name: 'veo',
  prefixes: ['/v1beta/'],
  upstream: true,
  error: googleError,
  authenticate,
  recoverJob: recoverOperation,
  routes: [
    { name: 'veo.predict', method: 'POST', path: /^\/v1beta\/models\/([^/:]+):predictLongRunning$/, idempotent: true, handle: predictLongRunning },
    { name: 'veo.operation', method: 'GET', path: /^\/v1beta\/models\/([^/:]+)\/operations\/([^/]+)$/, handle: getOperation },
    { name: 'veo.download', method: 'GET', path: /^\/v1beta\/files\/([^/:]+):download$/, handle: downloadFile },
  ],
};

function blobError(status: number, message: string): Reply {
  return { kind: 'json', status, body: { error: { code: status, message } } };
}

/** Signed "storage" URLs the download redirect points to: no API key, no latency, no random faults. */
export const veoBlobModule: ProtocolModule = {
  name: 'blobs',
  prefixes: ['/_sim/blobs/'],
  upstream: false,
  error: blobError,
  routes: [
    {
      name: 'sim.blob',
      method: 'GET',
      path: /^\/_sim\/blobs\/([^/]+)\.mp4$/,
      auth: false,
      handle: (ctx) => {
        const id = ctx.params[0] ?? '';
        if (ctx.query.get('sig') !== ctx.sim.sign(id)) return blobError(403, 'Invalid or missing signature.');
        const file = findFile(ctx, id);
        if (!file || !fileReady(ctx, file.job)) return blobError(404, 'No such blob.');
        return { kind: 'bytes', status: 200, body: sampleVideo(file.job.videoKib), contentType: 'video/mp4', ranges: true };
      },
    },
  ],
};
