import type { TextChannel, VideoChannel } from '../../config/channels';
import { channelSettings, type ChannelErrorView, type ChannelHealth, type ChannelHealthView, type ChannelSettingsView } from '../../proxy/channel-health';
import type { ChannelErrorSummary } from '../../store/channel-errors';

/**
 * A video channel in GET /admin/channels. The worker calls it, so its figures come from the
 * failures the worker records (store/channel-errors.ts) over the last 24 hours; the rest and
 * failover figures of text channels do not apply (null).
 */
export interface VideoChannelView extends ChannelSettingsView {
  kind: 'video';
  /** failing: a retryable failure (connection, 429, 5xx) within the last FAILING_WINDOW_S. */
  state: 'healthy' | 'failing';
  resting_until: null;
  consecutive_failures: null;
  served: null;
  /** Failed upstream requests within the last 24 hours. */
  failed: number;
  last_error: string | null;
  failovers: null;
  cooldowns: null;
  recent_errors: ChannelErrorView[];
}

export type AdminChannelView = (ChannelHealthView & { kind: 'text' }) | VideoChannelView;

/** How recent a retryable failure makes a video channel "failing". */
export const FAILING_WINDOW_S = 300;

/**
 * Every channel: text ones with the health this process keeps (it proxies them), video ones
 * with the failures the worker recorded.
 */
export function adminChannelsView(
  health: ChannelHealth,
  text: readonly TextChannel[],
  video: readonly VideoChannel[],
  videoErrors: ReadonlyMap<string, ChannelErrorSummary>,
  nowS = Math.floor(Date.now() / 1000),
): AdminChannelView[] {
  return [
    ...health.view(text).map((c) => ({ kind: 'text' as const, ...c })),
    ...video.map((c): VideoChannelView => {
      const errors = videoErrors.get(c.name);
      const lastRetryable = errors?.lastRetryableAt ?? null;
      const failing = lastRetryable !== null && nowS - lastRetryable < FAILING_WINDOW_S;
      return {
        kind: 'video',
        ...channelSettings(c),
        state: failing ? 'failing' : 'healthy',
        resting_until: null,
        consecutive_failures: null,
        served: null,
        failed: errors?.failed ?? 0,
        last_error: errors?.recent[0]?.message ?? null,
        failovers: null,
        cooldowns: null,
        recent_errors: errors?.recent ?? [],
      };
    }),
  ];
}
