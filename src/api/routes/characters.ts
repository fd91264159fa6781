import Router from '@koa/router';
import { newCharacterUsername } from '../../catalog/task-id';
import type { CharacterState } from '../../tasks/task';
import type { GatewayState } from '../context';
import { NotFoundError } from '../errors';
import { jsonBody } from '../middleware/json-body';
import { assertFetchable } from '../reference-images';
import { finishedVideoOf } from '../task-lookup';
import { characterCreateBody } from '../schemas/character-create';
import { parseOrThrow } from '../schemas/zod-error';
import type { VideoRouteDeps } from './video';

/** POST /motion/v1/characters and GET /motion/v1/characters/{id} (the permalink), spec 2.3 and 4.8. */
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
    const ownerId = ctx.state.apiKey!.id;
    let source;
    if (body.url !== undefined) {
      assertFetchable(body.url, 'url', deps.config.env.FETCH_ALLOW_PRIVATE);
      source = { kind: 'url' as const, url: body.url, timestamps: body.timestamps };
    } else {
      const { task, video } = await finishedVideoOf(deps.tasks, body.from_task ?? '', ownerId, 'from_task');
      source = { kind: 'task' as const, taskId: task.id, videoKey: video.key, timestamps: body.timestamps };
    }
    const username = newCharacterUsername();
    const character = await deps.paid.createCharacter({
      characterId: `char_${username}`,
      username,
      ownerId,
      source,
      model: 'motion-2',
      createdAt: Date.now(),
    });
    ctx.state.log.info({ characterId: character.id }, 'character created');
    ctx.body = view(character);
  });

  router.get('/motion/v1/characters/:id', async (ctx) => {
    const id = ctx.params.id ?? '';
    const character = /^char_[a-z0-9_.]{2,64}$/.test(id) ? await deps.characters.get(id, ctx.state.apiKey!.id) : null;
    if (!character) throw new NotFoundError('No character found with that id.', 'id');
    ctx.body = view(character);
  });

  return router;
}
