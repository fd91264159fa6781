import fs from 'node:fs';
import YAML from 'yaml';
import { z } from 'zod';
import type { Config } from './env';
import { ConfigError } from './env';
import { TEXT_CHANNEL_TYPES, TEXT_PROVIDERS, VIDEO_CHANNEL_TYPES, VIDEO_PROVIDERS, type TextChannelType, type VideoChannelType } from '../providers/registry';
import { identityModels, type ShortcutChannel } from '../providers/provider';

/**
 * Upstream channels: where each gateway model is sent. Declared in CHANNELS_FILE (YAML or
 * JSON, see channels.example.yaml) and/or by env shortcuts; with no provider credentials at
 * all, every video model goes to the provider simulator so the demo works on a fresh machine.
 */

/** Submit attempts on a channel before failover to the next one (channels file `submit_attempts`). */
export const DEFAULT_SUBMIT_ATTEMPTS = 3;

/** How often a real provider's running jobs are polled unless UPSTREAM_POLL_MS or a channel says otherwise. */
const REAL_POLL_MS = 10_000;

const common = {
  name: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'lowercase letters, digits, - and _'),
  base_url: z.url({ protocol: /^https?$/ }),
  /** The key itself, or the name of an env variable holding it (api_key_env), never both. */
  api_key: z.string().min(1).optional(),
  api_key_env: z.string().min(1).optional(),
  /** gateway model -> upstream model, or a list of names sent unchanged */
  models: z.union([
    z.record(z.string(), z.string().min(1)).refine((m) => Object.keys(m).length > 0, 'must name at least one model'),
    z.array(z.string().min(1)).min(1, 'must name at least one model'),
  ]),
  /** The highest priority serves a model first; lower ones are the failover. */
  priority: z.number().int().default(0),
  /** Share of requests among channels of the same priority. */
  weight: z.number().int().min(1).max(1000).default(1),
};

const videoChannelSchema = z
  .strictObject({
    ...common,
    type: z.enum(VIDEO_CHANNEL_TYPES),
    poll_ms: z.number().int().min(50).max(600_000).optional(),
    /** A rough job length; progress of providers that report none is estimated from it. */
    expected_job_seconds: z.number().min(1).max(86_400).default(90),
    /** openai-videos: send the gateway's extension fields (watermark, private, characters). */
    send_extensions: z.boolean().default(true),
    /**
     * openai-videos: poll running jobs by listing them (GET /v1/videos, a hundred per request)
     * rather than one request per job; default UPSTREAM_POLL_BY_LIST.
     */
    poll_by_list: z.boolean().optional(),
    /**
     * How many times a task's submit is tried on this channel before it goes to the next channel
     * serving its model (only when there is one and the provider surely took no job).
     */
    submit_attempts: z.number().int().min(1).max(20).default(DEFAULT_SUBMIT_ATTEMPTS),
  })
  .refine((c) => c.type === 'openai-videos' || c.poll_by_list === undefined, {
    // Veo's operations can only be read one by one.
    message: 'poll_by_list is a setting of openai-videos channels only (their provider lists its jobs)',
    path: ['poll_by_list'],
  });

const textChannelSchema = z
  .strictObject({
    ...common,
    type: z.enum(TEXT_CHANNEL_TYPES),
    /** openai-responses: how often a background response is polled upstream. */
    poll_ms: z.number().int().min(50).max(600_000).optional(),
    /** openai-responses: create attempts of a background response here before it goes to the next channel. */
    submit_attempts: z.number().int().min(1).max(20).optional(),
  })
  .refine((c) => c.type === 'openai-responses' || (c.poll_ms === undefined && c.submit_attempts === undefined), {
    message: 'poll_ms and submit_attempts are settings of openai-responses channels (background responses) only',
    path: ['poll_ms'],
  });

const channelSchema = z
  .discriminatedUnion('type', [videoChannelSchema, textChannelSchema])
  .refine((c) => !(c.api_key && c.api_key_env), { message: 'give api_key or api_key_env, not both', path: ['api_key'] });

const fileSchema = z.strictObject({ channels: z.array(channelSchema) });

export interface VideoChannel {
  name: string;
  type: VideoChannelType;
  baseUrl: string;
  apiKey: string;
  models: Record<string, string>;
  priority: number;
  weight: number;
  pollMs: number;
  expectedJobMs: number;
  sendExtensions: boolean;
  /** Running jobs are polled by listing the channel's jobs, where its provider lists them (activities/channel-poller.ts). */
  pollByList: boolean;
  /** Submit attempts here before the task may fail over to the next channel. */
  submitAttempts: number;
  simulated: boolean;
}

/**
 * A text channel's base_url is what that protocol's official SDK takes as its base:
 * `https://api.anthropic.com` for anthropic-native (the gateway appends /v1/messages),
 * `https://api.openai.com/v1` for openai-compatible (it appends /chat/completions).
 */
export interface TextChannel {
  name: string;
  type: TextChannelType;
  baseUrl: string;
  apiKey: string;
  models: Record<string, string>;
  priority: number;
  weight: number;
  simulated: boolean;
  /** openai-responses: how often a background response is polled upstream (the loader sets it; 2 s when absent). */
  pollMs?: number;
  /** openai-responses: create attempts of a background response here before it may fail over (the loader sets it; 3 when absent). */
  submitAttempts?: number;
}

export type Channel = VideoChannel | TextChannel;

export function isTextChannel(c: Channel): c is TextChannel {
  return (TEXT_CHANNEL_TYPES as readonly string[]).includes(c.type);
}

export function isVideoChannel(c: Channel): c is VideoChannel {
  return !isTextChannel(c);
}

export const SIMULATOR_API_KEY = 'sim-key';

const trimUrl = (url: string) => url.replace(/\/+$/, '');
const trimmed = (c: ShortcutChannel): ShortcutChannel => ({ ...c, baseUrl: trimUrl(c.baseUrl) });

function fromFile(file: string, env: NodeJS.ProcessEnv, e: Config['env']): Channel[] {
  const defaultPollMs = e.UPSTREAM_POLL_MS ?? REAL_POLL_MS;
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
  const names = new Set<string>();
  return parsed.data.channels.map((c): Channel => {
    if (names.has(c.name)) throw new ConfigError(`CHANNELS_FILE ${file}: two channels are named ${c.name}`);
    names.add(c.name);
    const apiKey = c.api_key ?? (c.api_key_env ? env[c.api_key_env] : undefined);
    if (!apiKey) throw new ConfigError(`CHANNELS_FILE ${file}: channel ${c.name} has no api_key (or its api_key_env is unset)`);
    const shared = {
      name: c.name,
      baseUrl: trimUrl(c.base_url),
      apiKey,
      models: Array.isArray(c.models) ? identityModels(c.models) : c.models,
      priority: c.priority,
      weight: c.weight,
      simulated: false,
    };
    if (!('send_extensions' in c)) return { ...shared, type: c.type, ...backgroundSettings(c.type, c.poll_ms ?? defaultPollMs, c.submit_attempts) };
    return {
      ...shared,
      type: c.type,
      pollMs: c.poll_ms ?? defaultPollMs,
      expectedJobMs: c.expected_job_seconds * 1000,
      sendExtensions: c.send_extensions,
      pollByList: c.poll_by_list ?? e.UPSTREAM_POLL_BY_LIST,
      submitAttempts: c.submit_attempts,
    };
  });
}

/** The background-response settings of an openai-responses channel; other text channels have none. */
function backgroundSettings(type: TextChannelType, pollMs: number, submitAttempts = DEFAULT_SUBMIT_ATTEMPTS): Pick<TextChannel, 'pollMs' | 'submitAttempts'> {
  return type === 'openai-responses' ? { pollMs, submitAttempts } : {};
}

export function simulatorUrl(config: Config): string {
  return trimUrl(config.env.SIMULATOR_URL ?? `http://127.0.0.1:${config.env.SIMULATOR_PORT}`);
}

/**
 * Every channel: CHANNELS_FILE first, then the env shortcuts. With none at all, every model
 * (video and text) goes to the provider simulator, so the demo works on a fresh machine.
 */
export function loadChannels(config: Config, env: NodeJS.ProcessEnv = process.env): Channel[] {
  const e = config.env;
  const realPollMs = e.UPSTREAM_POLL_MS ?? REAL_POLL_MS;
  const channels: Channel[] = e.CHANNELS_FILE ? fromFile(e.CHANNELS_FILE, env, e) : [];
  // The env shortcuts, in the registry's order: video providers, then text providers.
  const base = { priority: 0, weight: 1, pollMs: realPollMs, expectedJobMs: 90_000, pollByList: e.UPSTREAM_POLL_BY_LIST, simulated: false };
  for (const p of VIDEO_PROVIDERS) {
    const c = p.fromEnv(e);
    if (c)
      channels.push({
        ...base,
        ...trimmed(c),
        type: p.type,
        sendExtensions: p.sendsExtensions,
        submitAttempts: DEFAULT_SUBMIT_ATTEMPTS,
      });
  }
  const text = { priority: 0, weight: 1, simulated: false };
  for (const p of TEXT_PROVIDERS) {
    const c = p.fromEnv(e);
    if (c) channels.push({ ...text, ...trimmed(c), type: p.type, ...backgroundSettings(p.type, realPollMs) });
  }
  const names = new Set<string>();
  for (const c of channels) {
    if (names.has(c.name)) throw new ConfigError(`Two channels are named ${c.name} (CHANNELS_FILE and an env shortcut?): channel names must be unique.`);
    names.add(c.name);
  }
  if (channels.length > 0) return channels;

  const url = simulatorUrl(config);
  const sim = {
    ...base,
    apiKey: SIMULATOR_API_KEY,
    pollMs: e.UPSTREAM_POLL_MS ?? 1000,
    expectedJobMs: e.SIMULATOR_JOB_MS,
    simulated: true,
    sendExtensions: true,
    submitAttempts: DEFAULT_SUBMIT_ATTEMPTS,
  };
  return [
    ...VIDEO_PROVIDERS.map((p): Channel => ({
      ...sim,
      name: p.simulated.name,
      type: p.type,
      baseUrl: `${url}${p.simulated.basePath}`,
      models: p.simulated.models,
    })),
    ...TEXT_PROVIDERS.map((p): Channel => ({
      ...text,
      ...backgroundSettings(p.type, sim.pollMs),
      simulated: true,
      apiKey: SIMULATOR_API_KEY,
      name: p.simulated.name,
      type: p.type,
      baseUrl: `${url}${p.simulated.basePath}`,
      models: p.simulated.models,
    })),
  ];
}

export function loadVideoChannels(config: Config, env: NodeJS.ProcessEnv = process.env): VideoChannel[] {
  return loadChannels(config, env).filter(isVideoChannel);
}

export function loadTextChannels(config: Config, env: NodeJS.ProcessEnv = process.env): TextChannel[] {
  return loadChannels(config, env).filter(isTextChannel);
}

/** Channels serving a model, best first. */
export function channelsFor<C extends Channel>(channels: readonly C[], model: string): C[] {
  return channels.filter((c) => Object.hasOwn(c.models, model)).sort((a, b) => b.priority - a.priority);
}

/**
 * The order channels are tried in: highest priority first, within one priority a weighted
 * random order (Efraimidis-Spirakis: sorting by u^(1/w) draws a weighted random permutation).
 * Channels for which `last` holds (resting ones) go behind all others. Text requests and video
 * submits fail over along it.
 */
export function failoverOrder<C extends Channel>(candidates: readonly C[], random: () => number = Math.random, last: (c: C) => boolean = () => false): C[] {
  const keyed = candidates.map((c) => ({ c, key: random() ** (1 / c.weight), last: last(c) }));
  keyed.sort((a, b) => Number(a.last) - Number(b.last) || b.c.priority - a.c.priority || b.key - a.key);
  return keyed.map((k) => k.c);
}
