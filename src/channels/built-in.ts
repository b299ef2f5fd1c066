import type { Config } from '../config/config.schema.js';
import type { EventBus } from '../events/index.js';
import type { Guard } from '../http/guard.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { AuditLog } from '../security/audit.js';
import type { IdentityCheck } from '../security/identity.js';
import type { RateLimiter } from '../security/rate-limit.js';
import type { MessagePath } from '../turns/index.js';
import { ChannelRegistry } from './channel-registry.js';
import { createWebhookChannel, type WebhookChannel } from './webhook/webhook.channel.js';
import { createWebSocketChannel, type WebSocketChannel } from './websocket/websocket.channel.js';

/** The channels every gateway has: the registry, the WebSocket, and the webhook when configured. */
export interface BuiltInChannels {
  registry: ChannelRegistry;
  websocket: WebSocketChannel;
  webhook: WebhookChannel | null;
}

/**
 * Builds the built-in channels (DECISIONS §7, §8) and registers them: the
 * WebSocket (register it on the API server before it is ready) and, when
 * `channels.webhook.enabled`, the webhook on its own server. Both hand
 * their messages to the message path's door.
 */
export function createBuiltInChannels(options: {
  config: Config;
  guard: Guard;
  rateLimiter: RateLimiter;
  audit: AuditLog;
  messages: Pick<MessagePath, 'submit' | 'follow' | 'waitFor' | 'interrupt' | 'tap'> &
    Partial<Pick<MessagePath, 'outbox' | 'overloaded'>>;
  bus: EventBus;
  /** The identity check at WebSocket authentication. */
  checkIdentity: IdentityCheck;
  clock: Clock;
  logger: Logger;
  isDraining: () => boolean;
}): BuiltInChannels {
  const { config, guard, messages, clock, logger } = options;
  const registry = new ChannelRegistry({ clock, bus: options.bus, logger, outbox: messages.outbox ?? null });
  const websocket = createWebSocketChannel({
    ...options,
    stats: registry.statsFor('websocket'),
  });
  const webhookConfig = config.channels.webhook;
  const webhook = webhookConfig.enabled
    ? createWebhookChannel({
        config: webhookConfig,
        maxBodyBytes: config.gateway.max_body_bytes,
        clock,
        logger,
        messages,
        loopbackTrusted: (remoteAddress, host) =>
          guard.loopbackTrusted({ method: 'POST', path: webhookConfig.path, headers: { host }, remoteAddress }),
        stats: registry.statsFor('webhook'),
        isDraining: options.isDraining,
      })
    : null;
  registry.add(websocket);
  if (webhook) registry.add(webhook);
  return { registry, websocket, webhook };
}
