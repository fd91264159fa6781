import type { TextChannel, VideoChannel } from '../../config/channels';
import type { ChannelHealth, ChannelHealthView } from '../../proxy/channel-health';

/** A video channel in GET /admin/channels: the worker calls it, so this process holds no health figures for it. */
export interface VideoChannelView {
  kind: 'video';
  name: string;
  type: string;
  models: string[];
  priority: number;
  weight: number;
  simulated: boolean;
  state: null;
  resting_until: null;
  consecutive_failures: null;
  served: null;
  failed: null;
  last_error: null;
}

export type AdminChannelView = (ChannelHealthView & { kind: 'text' }) | VideoChannelView;

/**
 * Every channel: text ones with the health this process keeps (it proxies them), video ones
 * with their settings only (their calls run in the worker; its metrics count them).
 */
export function adminChannelsView(health: ChannelHealth, text: readonly TextChannel[], video: readonly VideoChannel[]): AdminChannelView[] {
  return [
    ...health.view(text).map((c) => ({ kind: 'text' as const, ...c })),
    ...video.map((c): VideoChannelView => ({
      kind: 'video',
      name: c.name,
      type: c.type,
      models: Object.keys(c.models),
      priority: c.priority,
      weight: c.weight,
      simulated: c.simulated,
      state: null,
      resting_until: null,
      consecutive_failures: null,
      served: null,
      failed: null,
      last_error: null,
    })),
  ];
}
