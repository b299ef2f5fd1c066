import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';

/**
 * A channel: a way messages reach the agent (WebSocket, webhook, …). The
 * registry starts, stops and reports channels; each implementation owns its
 * listeners and connections.
 */
export interface Channel {
  readonly name: string;
  /** Starts accepting messages (listen / connect). Rejects with the reason it could not. */
  start(): Promise<void>;
  /** Stops accepting messages and closes its connections. Idempotent. */
  stop(): Promise<void>;
  /** True while accepting messages. */
  connected(): boolean;
}

/** Channel wire shape (spec variant A). */
export interface ChannelView {
  name: string;
  enabled: boolean;
  connected: boolean;
  uptime_seconds: number;
  messages_today: number;
  last_message_at: string | null;
  error: string | null;
  last_connected_at: string | null;
}

/** Per-channel counters kept by the registry; channels report messages through `noteMessage`. */
export class ChannelStats {
  private day = '';
  private today = 0;
  lastMessageAt: number | null = null;
  lastConnectedAt: number | null = null;
  connectedSince: number | null = null;
  error: string | null = null;

  constructor(private readonly clock: Clock) {}

  /** Counts one inbound message (messages_today resets at the UTC day boundary). */
  noteMessage(): void {
    const now = this.clock.now();
    const day = isoTime(now).slice(0, 10);
    if (day !== this.day) {
      this.day = day;
      this.today = 0;
    }
    this.today++;
    this.lastMessageAt = now;
  }

  messagesToday(): number {
    return isoTime(this.clock.now()).slice(0, 10) === this.day ? this.today : 0;
  }
}
