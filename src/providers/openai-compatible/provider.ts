/** OpenAI's chat completions API (and every compatible one): the text models of `/v1/chat/completions`. */
import { DEFAULT_OPENAI_TEXT_MODELS } from '../../catalog/text-models';
import { ConfigError, type Config } from '../../config/env';
import { identityModels, textProvider } from '../provider';
import { chatProtocol } from './protocol';

/** The text models the OPENAI_API_KEY shortcut serves: OPENAI_MODELS, or the defaults. */
export function openAiShortcutModels(env: Config['env']): string[] {
  const models = env.OPENAI_MODELS?.split(',')
    .map((m) => m.trim())
    .filter(Boolean) ?? [...DEFAULT_OPENAI_TEXT_MODELS];
  if (models.length === 0) throw new ConfigError('OPENAI_MODELS names no model: give a comma-separated list, or leave it unset for the defaults.');
  return models;
}

export const openAiCompatible = textProvider({
  type: 'openai-compatible',
  serves: 'text',
  protocol: chatProtocol,
  fromEnv: (env) => {
    if (!env.OPENAI_API_KEY) return null;
    return { name: 'openai', baseUrl: env.OPENAI_BASE_URL, apiKey: env.OPENAI_API_KEY, models: identityModels(openAiShortcutModels(env)) };
  },
  simulated: { name: 'sim-openai-chat', basePath: '/v1', models: identityModels(DEFAULT_OPENAI_TEXT_MODELS) },
  simulatorModule: 'simulator/openai-chat.ts',
});
