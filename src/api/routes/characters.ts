import Router from '@koa/router';
import { newCharacterUsername } from '../../catalog/task-id';
import type { CharacterState } from '../../tasks/task';
import { callerKey, type GatewayState } from '../context';
import { NotFoundError } from '../errors';
import { jsonBody } from '../middleware/json-body';
import { assertFetchable } from '../reference-images';
import { finishedVideoOf } from '../task-lookup';
import { characterCreateBody, characterListQuery } from '../schemas/character-create';
import { parseOrThrow } from '../schemas/zod-error';
import { CHARACTER_CREATE_LEASE_SECONDS } from '../task-request';
import type { VideoRouteDeps } from './video-tasks';
import { idempotentCreate } from '../idempotency';

/** POST /motion/v1/characters, GET /motion/v1/characters (the key's list) and GET /motion/v1/characters/{id} (the permalink), spec 2.3 and 4.8. */
export function characterRoutes(deps: VideoRouteDeps): Router<GatewayState> {
  const router = new Router<GatewayState>();
  const view = (c: CharacterState) => ({
    id: c.id,
    username: c.username,
    permalink: `${deps.config.publicBaseUrl}/motion/v1/characters/${c.id}`,
    profile_picture_url: deps.signer.sign(c.profileKey),
  });

  router.post('/motion/v1/characters', jsonBody(64 * 1024), async (ctx) => {
    const body = parseOrThrow(characterCreateBody, ctx.request.body);
    const ownerId = callerKey(ctx.state).id;
    let source;
    if (body.url !== undefined) {
      assertFetchable(body.url, 'url', deps.config.env.FETCH_ALLOW_PRIVATE);
      source = { kind: 'url' as const, url: body.url, timestamps: body.timestamps };
    } else {
      const { task, video } = await finishedVideoOf(deps.tasks, body.from_task ?? '', ownerId, 'from_task');
      source = { kind: 'task' as const, taskId: task.id, videoKey: video.key, timestamps: body.timestamps };
    }
    const character = await idempotentCreate(ctx, deps, {
      fingerprint: ['POST /motion/v1/characters', ctx.request.body],
      fresh: () => {
        const username = newCharacterUsername();
        return { taskId: `char_${username}`, characterId: `char_${username}`, username };
      },
      leaseSeconds: CHARACTER_CREATE_LEASE_SECONDS,
      // Null while it is still being made: a repeat then waits for that very workflow (it is started again with the same id).
      existing: (ids) => deps.characters.get(ids.taskId, ownerId),
      create: async (ids) => {
        const made = await deps.paid.createCharacter({
          characterId: ids.taskId,
          username: ids.username ?? ids.taskId.replace(/^char_/, ''),
          ownerId,
          source,
          model: 'motion-2',
          createdAt: Date.now(),
        });
        ctx.state.log.info({ characterId: made.id }, 'character created');
        return made;
      },
    });
    ctx.body = view(character);
  });

  /** The key's characters, newest first (the console's library). */
  router.get('/motion/v1/characters', async (ctx) => {
    const { limit } = parseOrThrow(characterListQuery, ctx.query);
    const data = (await deps.characters.library(callerKey(ctx.state).id, limit)).map(view);
    ctx.body = { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: false };
  });

  router.get('/motion/v1/characters/:id', async (ctx) => {
    const id = ctx.params.id ?? '';
    const character = /^char_[a-z0-9_.]{2,64}$/.test(id) ? await deps.characters.get(id, callerKey(ctx.state).id) : null;
    if (!character) throw new NotFoundError('No character found with that id.', 'id');
    ctx.body = view(character);
  });

  return router;
}
