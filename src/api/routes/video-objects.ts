import { createHash } from 'node:crypto';
import fs from 'node:fs';
import Router from '@koa/router';
import type { Context } from 'koa';
import { findVideoModel, type VideoModel } from '../../catalog/models';
import { newCharacterUsername, newRemixTaskId, newTaskId, newVideoObjectId } from '../../catalog/task-id';
import { IMAGE_EXTENSIONS, sniffImage, type ImageMime } from '../../net/media';
import { storageKeys } from '../../files/blob-store';
import type { CharacterSource, CharacterState, ImageRef } from '../../tasks/task';
import { callerKey, type GatewayState } from '../context';
import { ConflictError, GatewayError, InvalidRequestError, NotFoundError } from '../errors';
import { castFromPrompt, mergeCast } from '../character-mentions';
import { channelCheck } from '../channel-check';
import { jsonBody } from '../middleware/json-body';
import { multipartBody, readForm } from '../middleware/multipart-body';
import { assertFetchable } from '../reference-images';
import { parseVideosCreate, type VideosCreateFields } from '../schemas/video-object-create';
import { videosRemixBody } from '../schemas/video-object-remix';
import { videoContentQuery, videoListQuery } from '../schemas/video-list-query';
import { TaskList, UnknownCursor } from '../../tasks/task-list';
import { taskLedger, timelineOf } from '../../tasks/task-timeline';
import { TaskDeletion } from '../../tasks/task-deletion';
import { DeletedTasks } from '../../tasks/deleted-tasks';
import { serveBlob } from './files';
import { parseOrThrow } from '../schemas/zod-error';
import { buildTaskRequest, CHARACTER_CREATE_LEASE_SECONDS, CREATE_LEASE_SECONDS, createTaskOnce, startTask } from '../task-request';
import { finishedVideoOf, ownTask } from '../task-lookup';
import { videoUrlOf } from '../views/video-task';
import { videoContentView, videoDeletedView, videoListItemView, videoObjectCreateView, videoRemixView, videoStatusView } from '../views/video-object';
import type { VideoRouteDeps } from './video-tasks';
import { idempotentCreate } from '../idempotency';
import type { CreateIds } from '../../store/idempotency';
import { checkedCallbackUrl } from '../callback-url';
import { WebhookStore } from '../../store/webhooks';

/**
 * Whether GET /v1/videos/{id}/content answers with the file rather than the spec's JSON: when
 * the client prefers a binary type (the OpenAI SDK's downloadContent() sends
 * `Accept: application/binary`), or names a `variant` without asking for JSON. No Accept, `*\/*`
 * or application/json keep the JSON answer of spec 4.6.
 */
function wantsBytes(ctx: Context, variantGiven: boolean): boolean {
  const preferred = ctx.accepts('application/json', 'application/binary', 'application/octet-stream', 'video/mp4');
  if (preferred === 'application/json') return variantGiven && !/application\/json/i.test(ctx.get('accept'));
  return preferred !== false;
}

/** The /v1/videos family: create (multipart), list, retrieve, delete, content and remix (spec 4.3-4.7). */
export function videosRoutes(deps: VideoRouteDeps): Router<GatewayState> {
  const router = new Router<GatewayState>();
  const env = deps.config.env;
  const requireChannel = channelCheck(deps.channels);
  const taskList = new TaskList(deps.db, deps.tasks);
  const deletion = new TaskDeletion(deps.tasks, new DeletedTasks(deps.db), deps.billing, deps.blobs);
  const webhooks = new WebhookStore(deps.db);

  router.post('/v1/videos', ...multipartBody(env.FETCH_MAX_BYTES), async (ctx) => {
    const form = readForm(ctx.request.body, ctx.request.files as Record<string, unknown> | undefined);
    const unknownFile = Object.keys(form.files).find((name) => name !== 'input_reference');
    if (unknownFile) throw new InvalidRequestError(`Unrecognized file field: ${unknownFile}`, unknownFile, 'unknown_parameter');
    if (typeof form.fields.input_reference === 'string') {
      throw new InvalidRequestError("'input_reference' must be an uploaded image file.", 'input_reference');
    }
    const reference = form.files.input_reference;
    const { fields, model, aspectRatio } = parseVideosCreate(form.fields, reference !== undefined);
    requireChannel(model.id);
    const ownerId = callerKey(ctx.state).id;
    // Everything that can still refuse the request runs before anything is stored or made.
    const callbackUrl = await checkedCallbackUrl(fields.callback_url, ownerId, env, webhooks);
    const image = reference ? await readReference(reference.path) : undefined;
    const savesCharacter =
      fields.character_create?.save_to_library === true && (fields.character_url !== undefined || fields.character_from_task !== undefined);
    const { state, saved } = await idempotentCreate(ctx, deps, {
      fingerprint: ['POST /v1/videos', form.fields, image ? createHash('sha256').update(image.bytes).digest('hex') : null],
      fresh: () => {
        const username = newCharacterUsername();
        return {
          taskId: model.family === 'vidgen' ? newVideoObjectId() : newTaskId(model.id),
          ...(savesCharacter ? { username, characterId: `char_${username}` } : {}),
        };
      },
      leaseSeconds: savesCharacter ? CHARACTER_CREATE_LEASE_SECONDS : CREATE_LEASE_SECONDS,
      existing: async (ids) => {
        const existing = await deps.tasks.get(ids.taskId, ownerId);
        if (!existing) return null;
        return { state: existing, saved: ids.characterId ? ((await deps.characters.get(ids.characterId, ownerId)) ?? undefined) : undefined };
      },
      create: async (ids) => {
        const { character, cast, saved: made } = await resolveCharacters(fields, model, ownerId, ids);
        const images = image ? [await storeReference(image, ids.taskId)] : [];
        const request = buildTaskRequest(deps.config, {
          taskId: ids.taskId,
          ownerId,
          model,
          endpoint: 'videos',
          prompt: fields.prompt,
          images,
          aspectRatio,
          size: fields.size,
          seconds: fields.seconds,
          watermark: fields.watermark,
          private: fields.private,
          character,
          style: fields.style,
          metadata: fields.metadata,
          cast,
          callbackUrl,
        });
        const started = await startTask(deps.paid, deps.blobs, request);
        ctx.state.log.info({ taskId: ids.taskId, model: model.id }, 'task created');
        return { state: started, saved: made };
      },
    });
    // Extension: a character saved to the library is named in the answer, so it can be cast later.
    ctx.body = saved ? { ...videoObjectCreateView(state), character: { id: saved.id, username: saved.username } } : videoObjectCreateView(state);
  });

  router.get('/v1/videos/:id', async (ctx) => {
    ctx.body = videoStatusView(await ownTask(deps.tasks, ctx.params.id, callerKey(ctx.state).id), deps.signer);
  });

  // Any family's task (they share ids): a running one is cancelled and refunded, a finished one's file removed (tasks/task-deletion.ts).
  router.delete('/v1/videos/:id', async (ctx) => {
    const task = await ownTask(deps.tasks, ctx.params.id, callerKey(ctx.state).id);
    const { outcome } = await deletion.delete(task, ctx.state.log);
    // Another delete of the same task got there first: it is gone, as a second delete finds it.
    if (outcome === 'already-deleted') throw new NotFoundError('No task found with that id.', 'id');
    ctx.body = videoDeletedView(task);
  });

  router.post('/v1/videos/:id/remix', jsonBody(64 * 1024), async (ctx) => {
    const body = parseOrThrow(videosRemixBody, ctx.request.body);
    const source = await ownTask(deps.tasks, ctx.params.id, callerKey(ctx.state).id);
    if (source.family !== 'motion') {
      throw new InvalidRequestError(`Only motion videos can be remixed; '${source.id}' is a ${source.model} video.`, 'id', 'unsupported_model');
    }
    if (source.status !== 'completed' || !source.upstream) {
      throw new ConflictError(`Only completed videos can be remixed; this one is ${source.status}.`, 'id', 'invalid_video_state');
    }
    const model = findVideoModel(source.model);
    if (!model) throw new InvalidRequestError(`The model '${source.model}' is no longer served.`, 'id', 'model_not_found');
    const upstream = source.upstream;
    const ownerId = callerKey(ctx.state).id;
    const callbackUrl = await checkedCallbackUrl(body.callback_url, ownerId, env, webhooks);
    const state = await createTaskOnce(ctx, deps, {
      fingerprint: ['POST /v1/videos/{id}/remix', source.id, ctx.request.body],
      newTaskId: () => newRemixTaskId(model.id),
      create: async (taskId) => {
        const request = buildTaskRequest(deps.config, {
          taskId,
          ownerId,
          model,
          endpoint: 'videos',
          prompt: body.prompt,
          images: [],
          size: body.size ?? source.size,
          seconds: source.seconds,
          remixOf: { taskId: source.id, channel: upstream.channel, jobId: upstream.jobId },
          callbackUrl,
        });
        const started = await deps.paid.start(request);
        ctx.state.log.info({ taskId, remixOf: source.id }, 'remix created');
        return started;
      },
    });
    ctx.body = videoRemixView(state);
  });

  router.get('/v1/videos', async (ctx) => {
    const query = parseOrThrow(videoListQuery, ctx.query);
    let page;
    try {
      page = await taskList.page(callerKey(ctx.state).id, query);
    } catch (err) {
      if (err instanceof UnknownCursor) throw new InvalidRequestError(`'after' names no video of this key: ${err.message}`, 'after', 'invalid_cursor');
      throw err;
    }
    const data = page.tasks.map((t) => ({ ...videoListItemView(t.state, deps.signer), cost: t.cost }));
    ctx.body = { object: 'list', data, first_id: data[0]?.id ?? null, last_id: page.lastId, has_more: page.hasMore };
  });

  /** What happened to the task (tasks/task-timeline.ts): its workflow's history and its ledger rows. */
  router.get('/v1/videos/:id/timeline', async (ctx) => {
    const key = callerKey(ctx.state);
    const task = await ownTask(deps.tasks, ctx.params.id, key.id);
    const [events, ledger] = await Promise.all([deps.tasks.history(task.id), taskLedger(deps.db, task.id, key.id)]);
    ctx.body = { object: 'video.timeline', id: task.id, data: timelineOf(events, ledger, deps.tasks.payloadConverter) };
  });

  router.get('/v1/videos/:id/content', async (ctx) => {
    const variant = parseOrThrow(videoContentQuery, ctx.query).variant;
    const state = await ownTask(deps.tasks, ctx.params.id, callerKey(ctx.state).id);
    const videoUrl = videoUrlOf(state, deps.signer);
    if (state.status !== 'completed' || !videoUrl || !state.video) {
      const why =
        state.status === 'failed' ? `it failed (${state.error?.message ?? 'no reason recorded'})` : `it is ${state.status} (progress ${state.progress}%)`;
      throw new ConflictError(
        `The video is not available: ${why}. Content is available once the status is completed.`,
        'id',
        state.status === 'failed' ? 'video_failed' : 'video_not_ready',
      );
    }
    if (!wantsBytes(ctx, variant !== undefined)) {
      ctx.body = videoContentView({ ...state, status: 'completed' }, videoUrl);
      return;
    }
    if (variant !== undefined && variant !== 'video') {
      throw new GatewayError(
        404,
        'invalid_request_error',
        `This video has no ${variant}: the gateway stores the video only (variant=video).`,
        'variant',
        'variant_not_available',
      );
    }
    ctx.set('cache-control', 'private, max-age=3600');
    await serveBlob(ctx, deps.blobs, state.video.key);
  });

  /** The uploaded reference image, checked by its content rather than its declared type. */
  async function readReference(file: string): Promise<{ bytes: Buffer; mimeType: ImageMime }> {
    const bytes = await fs.promises.readFile(file);
    const mimeType = sniffImage(bytes);
    if (!mimeType) throw new InvalidRequestError("'input_reference' is not a PNG, JPEG, WEBP or GIF image.", 'input_reference', 'invalid_image');
    return { bytes, mimeType };
  }

  async function storeReference(image: { bytes: Buffer; mimeType: ImageMime }, taskId: string): Promise<ImageRef> {
    const key = storageKeys.input(taskId, 0, IMAGE_EXTENSIONS[image.mimeType]);
    await deps.blobs.write(key, image.bytes);
    return { kind: 'stored', key, mimeType: image.mimeType, bytes: image.bytes.length };
  }

  /**
   * The characters a motion task makes or casts: character_url / character_from_task (made in
   * the task, or first saved to the key's library with character_create.save_to_library) and
   * the @usernames of the prompt.
   */
  async function resolveCharacters(fields: VideosCreateFields, model: VideoModel, ownerId: string, ids: CreateIds) {
    const { taskId } = ids;
    let character: CharacterSource | undefined;
    if (fields.character_url) {
      character = {
        kind: 'url',
        url: assertFetchable(fields.character_url, 'character_url', env.FETCH_ALLOW_PRIVATE),
        timestamps: fields.character_timestamps,
      };
    }
    if (fields.character_from_task) {
      const { task, video } = await finishedVideoOf(deps.tasks, fields.character_from_task, ownerId, 'character_from_task');
      character = { kind: 'task', taskId: task.id, videoKey: video.key, timestamps: fields.character_timestamps };
    }
    let cast = model.family === 'motion' ? await castFromPrompt(fields.prompt, ownerId, deps.characters) : undefined;
    let saved: CharacterState | undefined;
    if (character && fields.character_create) {
      character.selfPortrait = fields.character_create.create_self_portrait;
      if (fields.character_create.save_to_library) {
        const username = ids.username ?? newCharacterUsername();
        // The task is paid for before the character is made, so a key that cannot pay for
        // both gets its 402 with nothing made (no character left in its library).
        await deps.paid.chargeAhead({ taskId, ownerId, model: model.id, seconds: fields.seconds, size: fields.size });
        try {
          saved = await deps.paid.createCharacter({
            characterId: `char_${username}`,
            username,
            ownerId,
            source: character,
            model: model.id,
            createdAt: Date.now(),
          });
        } catch (err) {
          await deps.paid.release(taskId);
          throw err;
        }
        cast = mergeCast(cast, { channel: saved.channel, characterIds: [saved.upstreamId] });
        character = undefined;
      }
    }
    return { character, cast, saved };
  }

  return router;
}
