import { platformChannelOf, type PlatformChannel, type PlatformDeps } from '../platform/platform.channel.js';
import type { TelegramTransport } from './telegram.transport.js';
import { TELEGRAM } from './telegram.update.js';
import {
  handleTelegramWebhook,
  secretMatches,
  TELEGRAM_SECRET_HEADER,
  telegramWebhookPath,
  type WebhookAnswer,
} from './telegram.webhook.js';

/** The Telegram channel: a platform channel plus its webhook route (webhook mode). */
export interface TelegramChannel extends PlatformChannel {
  readonly transport: TelegramTransport;
  /**
   * Webhook mode: the path, its framework-free handler, and whether a server
   * serves it (`registerTelegramWebhook` sets it; unserved, webhook mode
   * refuses to start); null when polling.
   */
  readonly webhook: {
    path: string;
    served: boolean;
    /** True when the secret header is right (checked before the body is read). */
    accepts(headers: Record<string, string | string[] | undefined>): boolean;
    handle(request: {
      headers: Record<string, string | string[] | undefined>;
      body: Buffer | string;
    }): Promise<WebhookAnswer>;
  } | null;
}

/** What the Telegram channel is built from. */
export interface TelegramChannelOptions extends PlatformDeps {
  pollSeconds?: number;
}

/**
 * Builds the Telegram channel (DECISIONS §16) and adds it to the registry,
 * enabled as configured, when a bot token is set; null (nothing added)
 * without one. Webhook mode without `webhook_secret` is refused at start.
 */
export async function addTelegramChannel(options: TelegramChannelOptions): Promise<TelegramChannel | null> {
  const config = options.config.channels.telegram;
  if (!config.bot_token) {
    if (config.enabled) options.logger.warn({ source: TELEGRAM }, 'telegram enabled without a bot token: not started');
    return null;
  }
  const log = options.logger.child({ source: TELEGRAM });
  // grammY is loaded only when a bot token is set: a gateway without Telegram does not carry it in memory.
  const { createTelegramTransport } = await import('./telegram.transport.js');
  const transport = createTelegramTransport({
    botToken: config.bot_token,
    mode: config.mode,
    apiRoot: config.api_root,
    logger: log,
    ...(options.wait ? { wait: options.wait } : {}),
    ...(options.pollSeconds !== undefined ? { pollSeconds: options.pollSeconds } : {}),
  });
  const platform = platformChannelOf(options, transport, config.groups);
  const secret = config.webhook_secret;
  const webhook: TelegramChannel['webhook'] =
    config.mode === 'webhook'
      ? {
          path: telegramWebhookPath(config.bot_token),
          served: false,
          accepts: (headers) => secret !== null && secretMatches(headers[TELEGRAM_SECRET_HEADER], secret),
          handle: (request) => handleTelegramWebhook(request, { secret, deliver: transport.webhookReceiver() }),
        }
      : null;
  const channel: TelegramChannel = {
    ...platform,
    name: TELEGRAM,
    transport,
    start: () => {
      if (config.mode === 'webhook' && !secret) {
        return Promise.reject(new Error('telegram webhook mode needs channels.telegram.webhook_secret'));
      }
      if (webhook && !webhook.served) {
        return Promise.reject(new Error('telegram webhook mode: no server serves its path'));
      }
      return platform.start();
    },
    webhook,
  };
  options.registry.add(channel, config.enabled);
  return channel;
}
