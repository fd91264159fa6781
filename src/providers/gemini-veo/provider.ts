/** Google's Gemini API (Veo models): long-running operations, polled. */
import { videoProvider } from '../provider';
import { geminiVeoClient } from './client';

/** The default mapping of gateway models to Veo models. */
export const DEFAULT_VEO_MODELS: Record<string, string> = {
  vidgen2: 'veo-2.0-generate-001',
  'vidgen2-fast': 'veo-2.0-generate-001',
  'vidgen2-pro': 'veo-2.0-generate-001',
  'vidgen2-fast-frames': 'veo-2.0-generate-001',
  // Only Veo 3.1 takes reference images ("components").
  'vidgen2-fast-components': 'veo-3.1-fast-generate-preview',
  vidgen3: 'veo-3.0-generate-001',
  'vidgen3-pro': 'veo-3.0-generate-001',
  'vidgen3-pro-frames': 'veo-3.0-generate-001',
  'vidgen3-fast': 'veo-3.0-fast-generate-001',
  'vidgen3.1': 'veo-3.1-generate-preview',
  vidgen_3_1: 'veo-3.1-generate-preview',
  'vidgen3.1-fast': 'veo-3.1-fast-generate-preview',
  'vidgen_3_1-fast': 'veo-3.1-fast-generate-preview',
};

export const geminiVeo = videoProvider({
  type: 'gemini-veo',
  serves: 'video',
  client: geminiVeoClient,
  sendsExtensions: false,
  fromEnv: (env) => (env.GEMINI_API_KEY ? { name: 'gemini', baseUrl: env.GEMINI_BASE_URL, apiKey: env.GEMINI_API_KEY, models: DEFAULT_VEO_MODELS } : null),
  simulated: { name: 'sim-veo', basePath: '', models: DEFAULT_VEO_MODELS },
  simulatorModule: 'simulator/gemini-veo.ts',
});
