import { characterCreateBody, characterListQuery } from '../../schemas/character-create';
import { queryParameters, requestSchema } from '../json-schema';
import { KEY_BEARER } from '../security';
import { errors, HEADERS, IDEMPOTENCY_KEY, JSON_BODY_400, keyedJson, pathId } from '../responses';
import type { RouteDoc } from '../types';
import { CREATE_ERRORS, READ_ERRORS } from './video-tasks';

/** Characters (routes/characters.ts, spec 2.3, 4.8). */
export function characterRoutes(): RouteDoc[] {
  return [
    {
      method: 'post',
      path: '/motion/v1/characters',
      operation: {
        operationId: 'createCharacter',
        summary: 'Make a character from a clip or a completed task (waits for it, at most 120 s)',
        description:
          'Exactly one of `url` (an MP4 clip, fetched through the private-address guard) and `from_task` (a completed task of this key); `timestamps` a 1 to 3 second span. The character belongs to the key; `@username` in a motion prompt casts it.',
        tags: ['Characters'],
        security: KEY_BEARER,
        parameters: [IDEMPOTENCY_KEY],
        requestBody: { required: true, description: 'At most 64 KiB.', content: { 'application/json': { schema: requestSchema(characterCreateBody) } } },
        responses: {
          '200': keyedJson('The character.', 'Character', { 'idempotent-replayed': HEADERS.idempotentReplayed }),
          ...errors({
            ...CREATE_ERRORS,
            400: `${JSON_BODY_400}; both or neither source, a bad span, a private address (\`private_address\`), or a clip that is not an MP4 (\`invalid_character_source\`).`,
            404: '`from_task` names no task of this key.',
            409: `${CREATE_ERRORS[409]} Also a \`from_task\` that has not completed (\`invalid_task_state\`).`,
            413: 'The body is over 64 KiB.',
            502: 'The provider failed to make the character (`upstream_failed`).',
            504: 'Still being made after 120 s (`timeout`): the message names the id to read later.',
          }),
        },
      },
    },
    {
      method: 'get',
      path: '/motion/v1/characters',
      operation: {
        operationId: 'listCharacters',
        summary: "The key's characters, newest first",
        description: 'Characters still being made or whose creation failed are not listed.',
        tags: ['Characters'],
        security: KEY_BEARER,
        parameters: queryParameters(characterListQuery),
        responses: { '200': keyedJson('The characters.', 'CharacterList'), ...errors({ ...READ_ERRORS, 400: 'A bad or unknown query parameter.' }) },
      },
    },
    {
      method: 'get',
      path: '/motion/v1/characters/{id}',
      operation: {
        operationId: 'getCharacter',
        summary: "A character's permalink, for the key that owns it",
        tags: ['Characters'],
        security: KEY_BEARER,
        parameters: [pathId('`char_<username>`.')],
        responses: { '200': keyedJson('The character.', 'Character'), ...errors({ ...READ_ERRORS, 404: 'No character of this key with that id.' }) },
      },
    },
  ];
}
