import type { EventBus } from '../events/index.js';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { EventOutbox } from '../turns/index.js';
import { ChannelStats, type Channel, type ChannelView } from './channel.js';

interface Entry {
  channel: Channel;
  stats: ChannelStats;
  enabled: boolean;
}

/**
 * The channels of this gateway: starts, stops and reports them (spec:
 * Channel, variant A). A channel that fails to start is reported with its
 * error (health `degraded`) instead of stopping the gateway.
 */
export class ChannelRegistry {
  private readonly entries = new Map<string, Entry>();
  private readonly statsByName = new Map<string, ChannelStats>();

  constructor(
    private readonly options: {
      clock: Clock;
      bus: EventBus;
      logger: Logger;
      /** Event subscriptions (DECISIONS §20): `channel.state_changed`, written in a transaction of its own. */
      outbox?: EventOutbox | null;
    },
  ) {}

  /** The counters a channel reports into; create them before the channel. */
  statsFor(name: string): ChannelStats {
    let stats = this.statsByName.get(name);
    if (!stats) {
      stats = new ChannelStats(this.options.clock);
      this.statsByName.set(name, stats);
    }
    return stats;
  }

  /** Adds a channel; `enabled` channels start with `startAll()`. */
  add(channel: Channel, enabled = true): void {
    this.entries.set(channel.name, { channel, stats: this.statsFor(channel.name), enabled });
  }

  /** Starts every enabled channel; failures are recorded, not thrown. */
  async startAll(): Promise<void> {
    for (const entry of this.entries.values()) if (entry.enabled) await this.startEntry(entry);
  }

  /** Stops every channel (shutdown). */
  async stopAll(): Promise<void> {
    for (const entry of this.entries.values()) await this.stopEntry(entry);
  }

  list(): ChannelView[] {
    return [...this.entries.values()].map((entry) => this.view(entry));
  }

  get(name: string): ChannelView | null {
    const entry = this.entries.get(name);
    return entry ? this.view(entry) : null;
  }

  /** Channel name → state for health: connected, disconnected, disabled or error. */
  states(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [name, entry] of this.entries) {
      out[name] = !entry.enabled
        ? 'disabled'
        : entry.channel.connected()
          ? 'connected'
          : entry.stats.error
            ? 'error'
            : 'disconnected';
    }
    return out;
  }

  /** Restarts a channel (enabling it). Null when unknown. */
  async reconnect(name: string): Promise<ChannelView | null> {
    const entry = this.entries.get(name);
    if (!entry) return null;
    await this.stopEntry(entry);
    entry.enabled = true;
    await this.startEntry(entry);
    return this.changed(entry, 'reconnected');
  }

  /** Stops a channel: `enabled: false, connected: false`. Null when unknown. */
  async disable(name: string): Promise<ChannelView | null> {
    const entry = this.entries.get(name);
    if (!entry) return null;
    entry.enabled = false;
    await this.stopEntry(entry);
    return this.changed(entry, 'disabled');
  }

  /** Starts a disabled channel again. Null when unknown. */
  async enable(name: string): Promise<ChannelView | null> {
    const entry = this.entries.get(name);
    if (!entry) return null;
    entry.enabled = true;
    if (!entry.channel.connected()) await this.startEntry(entry);
    return this.changed(entry, 'enabled');
  }

  private changed(entry: Entry, event: string): ChannelView {
    const view = this.view(entry);
    this.options.bus.publish('channels', event, { ...view });
    const outbox = this.options.outbox;
    if (outbox?.wants('channel.state_changed')) {
      const timestamp = isoTime(this.options.clock.now());
      void outbox.report([{ type: 'channel.state_changed', timestamp, data: { ...view, change: event } }]);
    }
    return view;
  }

  private async startEntry(entry: Entry): Promise<void> {
    try {
      await entry.channel.start();
      const now = this.options.clock.now();
      entry.stats.error = null;
      entry.stats.connectedSince = now;
      entry.stats.lastConnectedAt = now;
    } catch (err) {
      entry.stats.error = (err as Error).message;
      entry.stats.connectedSince = null;
      this.options.logger.error(
        { source: 'channels', channel: entry.channel.name, err: (err as Error).message },
        'channel failed to start',
      );
    }
  }

  private async stopEntry(entry: Entry): Promise<void> {
    try {
      await entry.channel.stop();
    } catch (err) {
      this.options.logger.warn(
        { source: 'channels', channel: entry.channel.name, err: (err as Error).message },
        'channel failed to stop cleanly',
      );
    }
    entry.stats.connectedSince = null;
  }

  private view(entry: Entry): ChannelView {
    const { stats } = entry;
    const connected = entry.enabled && entry.channel.connected();
    const now = this.options.clock.now();
    return {
      name: entry.channel.name,
      enabled: entry.enabled,
      connected,
      uptime_seconds: connected && stats.connectedSince !== null ? Math.floor((now - stats.connectedSince) / 1000) : 0,
      messages_today: stats.messagesToday(),
      last_message_at: stats.lastMessageAt === null ? null : isoTime(stats.lastMessageAt),
      error: stats.error,
      last_connected_at: stats.lastConnectedAt === null ? null : isoTime(stats.lastConnectedAt),
    };
  }
}
