import { failoverOrder, type TextChannel, type VideoChannel } from '../config/channels';
import { metrics } from '../metrics/metrics';

/** A failure as the operator's view lists it: when (unix seconds) and why. */
export interface ChannelErrorView {
  at: number;
  message: string;
}

/** How many failures of a channel its view keeps, newest first. */
const RECENT_ERRORS = 5;

interface Health {
  consecutiveFailures: number;
  restingUntil: number;
  served: number;
  failed: number;
  /** Requests that left this channel for the next one after it failed them. */
  failovers: number;
  /** Rests begun (a failure while resting extends the rest, it begins none). */
  cooldowns: number;
  lastError: string | null;
  recentErrors: ChannelErrorView[];
}

/** What a channel is configured as, in the operator's view (text and video channels alike). */
export interface ChannelSettingsView {
  name: string;
  type: string;
  models: string[];
  priority: number;
  weight: number;
  simulated: boolean;
}

export function channelSettings(c: TextChannel | VideoChannel): ChannelSettingsView {
  return { name: c.name, type: c.type, models: Object.keys(c.models), priority: c.priority, weight: c.weight, simulated: c.simulated };
}

export interface ChannelHealthView extends ChannelSettingsView {
  state: 'healthy' | 'resting';
  resting_until: number | null;
  consecutive_failures: number;
  served: number;
  failed: number;
  last_error: string | null;
  failovers: number;
  cooldowns: number;
  recent_errors: ChannelErrorView[];
}

/**
 * Which text channel to try, in what order, and which ones rest. Channels are tried by
 * priority (highest first), and within one priority in a weighted random order. A channel
 * that failed `threshold` times in a row (429, 5xx, connection) rests for the cooldown (or the
 * upstream's retry-after, if longer): it goes to the end of the order, tried only when every
 * other one has failed. When its rest is over one more failure sends it back to rest; one
 * success makes it healthy again.
 */
export class ChannelHealth {
  private readonly health = new Map<string, Health>();

  constructor(
    private readonly threshold: number,
    private readonly cooldownMs: number,
    private readonly now: () => number = Date.now,
    private readonly random: () => number = Math.random,
  ) {}

  private of(name: string): Health {
    let h = this.health.get(name);
    if (!h) {
      h = { consecutiveFailures: 0, restingUntil: 0, served: 0, failed: 0, failovers: 0, cooldowns: 0, lastError: null, recentErrors: [] };
      this.health.set(name, h);
    }
    return h;
  }

  order<C extends TextChannel>(candidates: readonly C[]): C[] {
    const now = this.now();
    return failoverOrder(candidates, this.random, (c) => this.of(c.name).restingUntil > now);
  }

  succeeded(name: string): void {
    const h = this.of(name);
    h.consecutiveFailures = 0;
    h.restingUntil = 0;
    h.served++;
  }

  failed(name: string, reason: string, retryAfterMs = 0): void {
    const h = this.of(name);
    h.consecutiveFailures++;
    h.failed++;
    h.lastError = reason;
    const now = this.now();
    h.recentErrors.unshift({ at: Math.floor(now / 1000), message: reason });
    h.recentErrors.length = Math.min(h.recentErrors.length, RECENT_ERRORS);
    if (h.consecutiveFailures >= this.threshold) {
      // A rest begins (not one extended by a failure while resting): one cooldown on the metric.
      if (h.restingUntil <= now) {
        metrics.cooldowns.inc({ channel: name });
        h.cooldowns++;
      }
      h.restingUntil = now + Math.max(this.cooldownMs, retryAfterMs);
    }
  }

  /** A request failed on this channel and moves on to the next one. */
  failedOver(name: string, reason: string): void {
    this.of(name).failovers++;
    metrics.failovers.inc({ channel: name, reason });
  }

  /** Whether each channel rests now (the gateway_channel_resting gauge). */
  resting(channels: readonly TextChannel[]): Map<string, boolean> {
    const now = this.now();
    return new Map(channels.map((c) => [c.name, this.of(c.name).restingUntil > now]));
  }

  view(channels: readonly TextChannel[]): ChannelHealthView[] {
    const now = this.now();
    return channels.map((c) => {
      const h = this.of(c.name);
      const resting = h.restingUntil > now;
      return {
        ...channelSettings(c),
        state: resting ? 'resting' : 'healthy',
        resting_until: resting ? Math.floor(h.restingUntil / 1000) : null,
        consecutive_failures: h.consecutiveFailures,
        served: h.served,
        failed: h.failed,
        last_error: h.lastError,
        failovers: h.failovers,
        cooldowns: h.cooldowns,
        recent_errors: [...h.recentErrors],
      };
    });
  }
}
