/**
 * What a provider is to the gateway: one descriptor per provider folder, listed once in
 * registry.ts. Channel loading (config/channels.ts), the video client lookup, the text
 * protocols and the simulator's channels all read the descriptors, so adding a provider is
 * one folder plus one line in the registry.
 */
import type { Config } from '../config/env';
import type { VideoChannel } from '../config/channels';
import type { TextProtocol } from '../proxy/text-proxy';
import type { VideoUpstream } from './video-upstream';

export interface UpstreamTimeouts {
  /** submit, download, characters */
  requestMs: number;
  /** status polls: short, so a hung poll ends well inside the poll activity's 30 s */
  pollMs: number;
}

/** A channel declared by environment variables: the fields a CHANNELS_FILE entry would give. */
export interface ShortcutChannel {
  name: string;
  baseUrl: string;
  apiKey: string;
  models: Record<string, string>;
}

interface ProviderBase<T extends string> {
  /** The channel `type` in CHANNELS_FILE. */
  type: T;
  /**
   * The channel the provider's environment shortcut declares (GEMINI_API_KEY, ...), or null
   * when it is not set; a ConfigError for half a setting.
   */
  fromEnv(env: Config['env']): ShortcutChannel | null;
  /** Its channel when no provider is configured: the provider simulator speaking its protocol. */
  simulated: {
    name: string;
    /** Appended to the simulator's URL to make the channel's base URL. */
    basePath: string;
    models: Record<string, string>;
  };
  /** The simulator module that imitates it (simulator/server.ts maps every type to its modules). */
  simulatorModule: string;
}

export interface VideoProvider<T extends string = string> extends ProviderBase<T> {
  serves: 'video';
  /** The client the worker calls the provider with. */
  client(channel: VideoChannel, timeouts: UpstreamTimeouts): VideoUpstream;
  /** Whether an env shortcut's channel sends the gateway's extension fields (watermark, private, characters). */
  sendsExtensions: boolean;
}

export interface TextProvider<T extends string = string> extends ProviderBase<T> {
  serves: 'text';
  /** How a text request is sent to a channel of this provider, and how its answer is read. */
  protocol: TextProtocol;
}

/** Keeps the literal `type`, so the registry can derive the union of channel types. */
export const videoProvider = <const T extends string>(p: VideoProvider<T>): VideoProvider<T> => p;
export const textProvider = <const T extends string>(p: TextProvider<T>): TextProvider<T> => p;

/** Models served under their own names. */
export const identityModels = (names: readonly string[]): Record<string, string> => Object.fromEntries(names.map((n) => [n, n]));
