/**
 * OpenAI's Responses API (and every provider compatible with it): the models of
 * `POST /v1/responses`. The responses-only models (o3-pro, deep research, ...) are served only
 * here; a channel may list any other model it serves on this API too.
 */
import { DEFAULT_OPENAI_TEXT_MODELS, RESPONSES_ONLY_MODELS } from '../../catalog/text-models';
import { identityModels, textProvider } from '../provider';
import { openAiShortcutModels } from '../openai-compatible/provider';
import { responsesProtocol } from './protocol';

export const openAiResponses = textProvider({
  type: 'openai-responses',
  serves: 'text',
  protocol: responsesProtocol,
  // The OPENAI_API_KEY shortcut: OpenAI serves the Responses API beside chat completions.
  fromEnv: (env) => {
    if (!env.OPENAI_API_KEY) return null;
    const models = [...RESPONSES_ONLY_MODELS, ...openAiShortcutModels(env)];
    return { name: 'openai-responses', baseUrl: env.OPENAI_BASE_URL, apiKey: env.OPENAI_API_KEY, models: identityModels(models) };
  },
  simulated: { name: 'sim-openai-responses', basePath: '/v1', models: identityModels([...RESPONSES_ONLY_MODELS, ...DEFAULT_OPENAI_TEXT_MODELS]) },
  simulatorModule: 'simulator/openai-responses.ts',
});
