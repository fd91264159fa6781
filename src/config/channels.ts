import fs from 'node:fs';
import YAML from 'yaml';
import { z } from 'zod';
import type { Config } from './env';
import { ConfigError } from './env';

/**
 * Upstream channels: where each gateway model is sent. Declared in CHANNELS_FILE (YAML or
 * JSON, see channels.example.yaml) and/or by env shortcuts; with no provider credentials at
 * all, every video model goes to the provider simulator so the demo works on a fresh machine.
 */
export const VIDEO_CHANNEL_TYPES = ['gemini-veo', 'openai-videos'] as const;
export type VideoChannelType = (typeof VIDEO_CHANNEL_TYPES)[number];

const channelSchema = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'lowercase letters, digits, - and _'),
  type: z.enum(VIDEO_CHANNEL_TYPES),
  base_url: z.url({ protocol: /^https?$/ }),
  /** The key itself, or the name of an env variable holding it (api_key_env), never both. */
  api_key: z.string().min(1).optional(),
  api_key_env: z.string().min(1).optional(),
  /** gateway model -> upstream model */
  models: z.record(z.string(), z.string().min(1)),
  priority: z.number().int().default(0),
  poll_ms: z.number().int().min(50).max(600_000).optional(),
  /** A rough job length; progress of providers that report none is estimated from it. */
  expected_job_seconds: z.number().min(1).max(86_400).default(90),
  /** openai-videos: send the gateway's extension fields (watermark, private, characters). */
  send_extensions: z.boolean().default(true),
}).refine((c) => !(c.api_key && c.api_key_env), { message: 'give api_key or api_key_env, not both', path: ['api_key'] });

const fileSchema = z.strictObject({ channels: z.array(channelSchema) });

export interface VideoChannel {
  name: string;
  type: VideoChannelType;
  baseUrl: string;
  apiKey: string;
  models: Record<string, string>;
  priority: number;
  pollMs: number;
  expectedJobMs: number;
  sendExtensions: boolean;
  simulated: boolean;
}

/** upstreams.md's default mapping of gateway models to Veo models. */
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

export const DEFAULT_MOTION_MODELS: Record<string, string> = {
  'motion-2': 'sora-2',
  'motion-2-pro': 'sora-2-pro',
};

export const SIMULATOR_API_KEY = 'sim-key';

function fromFile(file: string, env: NodeJS.ProcessEnv, defaultPollMs: number): VideoChannel[] {
  let raw: unknown;
  try {
    raw = YAML.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`CHANNELS_FILE ${file}: ${(err as Error).message}`);
  }
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(`CHANNELS_FILE ${file}: ${issue?.path.join('.')}: ${issue?.message}`);
  }
  return parsed.data.channels.map((c) => {
    const apiKey = c.api_key ?? (c.api_key_env ? env[c.api_key_env] : undefined);
    if (!apiKey) throw new ConfigError(`CHANNELS_FILE ${file}: channel ${c.name} has no api_key (or its api_key_env is unset)`);
    return {
      name: c.name,
      type: c.type,
      baseUrl: c.base_url.replace(/\/+$/, ''),
      apiKey,
      models: c.models,
      priority: c.priority,
      pollMs: c.poll_ms ?? defaultPollMs,
      expectedJobMs: c.expected_job_seconds * 1000,
      sendExtensions: c.send_extensions,
      simulated: false,
    };
  });
}

export function simulatorUrl(config: Config): string {
  return (config.env.SIMULATOR_URL ?? `http://127.0.0.1:${config.env.SIMULATOR_PORT}`).replace(/\/+$/, '');
}

export function loadVideoChannels(config: Config, env: NodeJS.ProcessEnv = process.env): VideoChannel[] {
  const e = config.env;
  const realPollMs = e.UPSTREAM_POLL_MS ?? 10_000;
  const channels: VideoChannel[] = e.CHANNELS_FILE ? fromFile(e.CHANNELS_FILE, env, realPollMs) : [];
  const base = { priority: 0, pollMs: realPollMs, expectedJobMs: 90_000, simulated: false };
  if (e.GEMINI_API_KEY) {
    channels.push({ ...base, name: 'gemini', type: 'gemini-veo', baseUrl: e.GEMINI_BASE_URL.replace(/\/+$/, ''), apiKey: e.GEMINI_API_KEY, models: DEFAULT_VEO_MODELS, sendExtensions: false });
  }
  if (e.OPENAI_VIDEOS_BASE_URL && e.OPENAI_VIDEOS_API_KEY) {
    channels.push({ ...base, name: 'openai-videos', type: 'openai-videos', baseUrl: e.OPENAI_VIDEOS_BASE_URL.replace(/\/+$/, ''), apiKey: e.OPENAI_VIDEOS_API_KEY, models: DEFAULT_MOTION_MODELS, sendExtensions: true });
  } else if (e.OPENAI_VIDEOS_BASE_URL || e.OPENAI_VIDEOS_API_KEY) {
    throw new ConfigError('OPENAI_VIDEOS_BASE_URL and OPENAI_VIDEOS_API_KEY go together: set both or neither.');
  }
  if (channels.length > 0) return channels;

  const sim = { ...base, baseUrl: simulatorUrl(config), apiKey: SIMULATOR_API_KEY, pollMs: e.UPSTREAM_POLL_MS ?? 1000, expectedJobMs: e.SIMULATOR_JOB_MS, simulated: true, sendExtensions: true };
  return [
    { ...sim, name: 'sim-veo', type: 'gemini-veo', models: DEFAULT_VEO_MODELS },
    { ...sim, name: 'sim-openai-videos', type: 'openai-videos', models: DEFAULT_MOTION_MODELS },
  ];
}

/** Channels serving a model, best first. */
export function channelsFor(channels: readonly VideoChannel[], model: string): VideoChannel[] {
  return channels.filter((c) => model in c.models).sort((a, b) => b.priority - a.priority);
}
