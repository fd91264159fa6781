import { KEY_EITHER } from '../security';
import { errors, KEY_ERRORS, keyedJson, pathId } from '../responses';
import type { RouteDoc } from '../types';

/** The model catalog (routes/models.ts): OpenAI's list shape with Anthropic's fields, so both SDKs list models. */
export function modelRoutes(): RouteDoc[] {
  return [
    {
      method: 'get',
      path: '/v1/models',
      operation: {
        operationId: 'listModels',
        summary: 'Every model some channel serves, text and video, with the endpoints that serve it',
        tags: ['Models'],
        security: KEY_EITHER,
        responses: { '200': keyedJson('The models.', 'ModelList'), ...errors(KEY_ERRORS) },
      },
    },
    {
      method: 'get',
      path: '/v1/models/{id}',
      operation: {
        operationId: 'getModel',
        summary: 'One model',
        tags: ['Models'],
        security: KEY_EITHER,
        parameters: [pathId('The model id.')],
        responses: { '200': keyedJson('The model.', 'Model'), ...errors({ ...KEY_ERRORS, 404: 'No channel serves a model with that id.' }) },
      },
    },
  ];
}
