/** Anthropic's messages API (and compatible): the native protocol of `/v1/messages` and the `cm` models. */
import { DEFAULT_NATIVE_UPSTREAM_MODELS, NATIVE_TEXT_MODELS } from '../../catalog/text-models';
import { identityModels, textProvider } from '../provider';
import { messagesProtocol } from './protocol';

export const anthropicNative = textProvider({
  type: 'anthropic-native',
  serves: 'text',
  protocol: messagesProtocol,
  fromEnv: (env) =>
    env.ANTHROPIC_API_KEY
      ? { name: 'anthropic', baseUrl: env.ANTHROPIC_BASE_URL, apiKey: env.ANTHROPIC_API_KEY, models: { ...DEFAULT_NATIVE_UPSTREAM_MODELS } }
      : null,
  // The simulator accepts the gateway's own model names.
  simulated: { name: 'sim-anthropic', basePath: '', models: identityModels(NATIVE_TEXT_MODELS) },
  simulatorModule: 'simulator/anthropic-messages.ts',
});
