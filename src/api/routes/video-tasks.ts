import Router from '@koa/router';
import type { VideoChannel } from '../../config/channels';
import { channelCheck } from '../channel-check';
import type { Config } from '../../config/env';
import { newTaskId, isTaskIdShape } from '../../catalog/task-id';
import type { BlobStore } from '../../files/blob-store';
import type { UrlSigner } from '../../files/signed-url';
import type { CharacterService } from '../../tasks/character-service';
import type { PaidTasks } from '../../tasks/paid-tasks';
import type { TaskService } from '../../tasks/task-service';
import type { Db } from '../../store/db';
import { callerKey, type GatewayState } from '../context';
import { InvalidRequestError, NotFoundError } from '../errors';
import { jsonBody } from '../middleware/json-body';
import { checkedCallbackUrl } from '../callback-url';
import { WebhookStore } from '../../store/webhooks';
import type { IdempotencyDeps } from '../idempotency';
import { castFromPrompt } from '../character-mentions';
import { intakeImages } from '../reference-images';
import { buildTaskRequest, createTaskOnce, startTask } from '../task-request';
import { parseVideoCreate } from '../schemas/video-task-create';
import { videoCreateView, videoQueryView } from '../views/video-task';

export interface VideoRouteDeps extends IdempotencyDeps {
  config: Config;
  /** The store, for the list of a key's tasks (billed_tasks). */
  db: Db;
  channels: readonly VideoChannel[];
  characters: CharacterService;
  tasks: TaskService;
  /** Starts what costs credits: video, remix and character tasks. */
  paid: PaidTasks;
  blobs: BlobStore;
  signer: UrlSigner;
}

/** The JSON family: POST /v1/video/create and GET /v1/video/query (spec 4.1, 4.2). */
export function videoRoutes(deps: VideoRouteDeps): Router<GatewayState> {
  const router = new Router<GatewayState>();
  const env = deps.config.env;
  const requireChannel = channelCheck(deps.channels);
  const webhooks = new WebhookStore(deps.db);

  router.post('/v1/video/create', jsonBody(env.MAX_JSON_BODY_BYTES), async (ctx) => {
    const { body, model, size, seconds } = parseVideoCreate(ctx.request.body);
    requireChannel(model.id);
    const ownerId = callerKey(ctx.state).id;
    const callbackUrl = await checkedCallbackUrl(body.callback_url, ownerId, env, webhooks);
    const state = await createTaskOnce(ctx, deps, {
      fingerprint: ['POST /v1/video/create', ctx.request.body],
      newTaskId: () => newTaskId(model.id),
      create: async (taskId) => {
        // What can still refuse the request runs before anything is stored.
        const cast = model.family === 'motion' ? await castFromPrompt(body.prompt, ownerId, deps.characters) : undefined;
        const images = await intakeImages(taskId, body.images ?? [], {
          blobs: deps.blobs,
          allowPrivate: env.FETCH_ALLOW_PRIVATE,
          maxBytes: env.FETCH_MAX_BYTES,
        });
        const request = buildTaskRequest(deps.config, {
          taskId,
          ownerId,
          model,
          endpoint: 'video-create',
          prompt: body.prompt,
          images,
          enhancePrompt: body.enhance_prompt,
          enableUpsample: body.enable_upsample,
          aspectRatio: body.aspect_ratio,
          size,
          seconds,
          watermark: body.watermark,
          private: body.private,
          character: body.character_url ? { kind: 'url', url: body.character_url, timestamps: body.character_timestamps } : undefined,
          cast,
          callbackUrl,
        });
        const started = await startTask(deps.paid, deps.blobs, request);
        ctx.state.log.info({ taskId, model: model.id }, 'task created');
        return started;
      },
    });
    ctx.body = videoCreateView(state);
  });

  router.get('/v1/video/query', async (ctx) => {
    const id = ctx.query.id;
    if (Array.isArray(id)) throw new InvalidRequestError("Query parameter 'id' was given more than once.", 'id');
    if (typeof id !== 'string' || id.trim() === '') {
      throw new InvalidRequestError("Missing required query parameter: 'id'.", 'id', 'missing_required_parameter');
    }
    const state = isTaskIdShape(id) ? await deps.tasks.get(id, callerKey(ctx.state).id) : null;
    if (!state) throw new NotFoundError('No task found with that id.', 'id');
    ctx.body = videoQueryView(state, deps.signer);
  });

  return router;
}
