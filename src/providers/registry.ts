/**
 * Every provider the gateway speaks to, one line each. Adding one: a folder beside these with
 * its client or protocol and a provider.ts descriptor, one line here, and its module in the
 * simulator (simulator/server.ts). Channel loading, the worker's clients, the text protocols
 * and the simulated channels all read these lists.
 */
import type { VideoChannel } from '../config/channels';
import { anthropicNative } from './anthropic/provider';
import { geminiVeo } from './gemini-veo/provider';
import { openAiCompatible } from './openai-compatible/provider';
import { openAiResponses } from './openai-responses/provider';
import { openAiVideos } from './openai-videos/provider';
import type { UpstreamTimeouts, VideoProvider } from './provider';
import type { VideoUpstream } from './video-upstream';

export const VIDEO_PROVIDERS = [geminiVeo, openAiVideos] as const;
export const TEXT_PROVIDERS = [anthropicNative, openAiCompatible, openAiResponses] as const;

export type VideoChannelType = (typeof VIDEO_PROVIDERS)[number]['type'];
export type TextChannelType = (typeof TEXT_PROVIDERS)[number]['type'];
export type ProviderType = VideoChannelType | TextChannelType;

export const VIDEO_CHANNEL_TYPES = VIDEO_PROVIDERS.map((p) => p.type) as [VideoChannelType, ...VideoChannelType[]];
export const TEXT_CHANNEL_TYPES = TEXT_PROVIDERS.map((p) => p.type) as [TextChannelType, ...TextChannelType[]];

export function videoProviderOf(type: VideoChannelType): VideoProvider {
  const provider = VIDEO_PROVIDERS.find((p) => p.type === type);
  if (!provider) throw new Error(`no video provider of type ${type}`);
  return provider;
}

export function videoClientFor(channel: VideoChannel, timeouts: UpstreamTimeouts): VideoUpstream {
  return videoProviderOf(channel.type).client(channel, timeouts);
}
