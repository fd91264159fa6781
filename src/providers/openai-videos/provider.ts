/** OpenAI's videos API (and providers compatible with it): jobs, polled; remix and characters. */
import { ConfigError } from '../../config/env';
import { videoProvider } from '../provider';
import { openAiVideosClient } from './client';

export const DEFAULT_MOTION_MODELS: Record<string, string> = {
  'motion-2': 'sora-2',
  'motion-2-pro': 'sora-2-pro',
};

export const openAiVideos = videoProvider({
  type: 'openai-videos',
  serves: 'video',
  client: openAiVideosClient,
  sendsExtensions: true,
  fromEnv: (env) => {
    if (env.OPENAI_VIDEOS_BASE_URL && env.OPENAI_VIDEOS_API_KEY) {
      return { name: 'openai-videos', baseUrl: env.OPENAI_VIDEOS_BASE_URL, apiKey: env.OPENAI_VIDEOS_API_KEY, models: DEFAULT_MOTION_MODELS };
    }
    if (env.OPENAI_VIDEOS_BASE_URL || env.OPENAI_VIDEOS_API_KEY) {
      throw new ConfigError('OPENAI_VIDEOS_BASE_URL and OPENAI_VIDEOS_API_KEY go together: set both or neither.');
    }
    return null;
  },
  simulated: { name: 'sim-openai-videos', basePath: '', models: DEFAULT_MOTION_MODELS },
  simulatorModule: 'simulator/openai-videos.ts',
});
