import type { Config } from '../../config/config.schema.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../logs/logger.js';
import type { Intake } from '../../turns/intake.js';
import type { TurnWaiters } from '../../turns/turn-waiters.js';
import type { Channel, ChannelStats } from '../channel.js';
import type { IdentityCheck } from '../identity-check.js';

export interface WebhookChannelOptions {
  config: Config['channels']['webhook'];
  /** Body cap (gateway.max_body_bytes). */
  maxBodyBytes: number;
  clock: Clock;
  logger: Logger;
  /** The webhook's own intake (its idempotency LRU holds 2048 entries). */
  intake: Intake;
  waiters: TurnWaiters;
  /** Decides the sender (`webhook:<sender_id>`) by auth mode; throws ApiError 403. */
  checkIdentity: IdentityCheck;
  /** Loopback exemption as for HTTP: peer address + Host header → trusted. */
  loopbackTrusted: (remoteAddress: string | undefined, hostHeader: string | undefined) => boolean;
  stats: ChannelStats;
}

/** The webhook channel: its own HTTP server (DECISIONS §7). */
export interface WebhookChannel extends Channel {
  /** `http://host:port` while listening, else null. */
  readonly address: string | null;
  /** Webhook turns accepted and not yet at an outcome (bounded by max_pending). */
  pending(): number;
}

/** Builds the webhook channel (not listening until `start()`). */
export function createWebhookChannel(options: WebhookChannelOptions): WebhookChannel {
  void options;
  throw new Error('webhook channel not implemented yet');
}
