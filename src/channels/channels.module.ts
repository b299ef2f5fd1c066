import type { GatewayModule } from '../module.js';
import type { GaugeRegistry } from '../security/cluster-counts.js';
import type { MessagePath } from '../turns/index.js';
import { createBuiltInChannels, type BuiltInChannels } from './built-in.js';
import { channelRoutes } from './channels.routes.js';
import type { PlatformDeps } from './platform/platform.channel.js';
import { registerSlackEvents } from './slack/slack.routes.js';
import { addSlackChannel, type SlackChannel } from './slack/slack.channel.js';
import { registerTelegramWebhook } from './telegram/telegram.routes.js';
import { addTelegramChannel, type TelegramChannel } from './telegram/telegram.channel.js';

/** Every channel of a gateway: the built-in ones and the platform channels configured (DECISIONS §7, §8, §16). */
export interface Channels extends BuiltInChannels {
  telegram: TelegramChannel | null;
  slack: SlackChannel | null;
}

/**
 * Builds every channel: the WebSocket and the webhook, then Telegram and
 * Slack when configured. With `gauges` (gateways sharing a database) the
 * webhook's `max_pending` counts across them (ADR 0028).
 */
export async function openChannels(
  deps: Omit<Parameters<typeof createBuiltInChannels>[0], 'messages'> &
    Omit<PlatformDeps, 'registry'> & { messages: MessagePath; gauges: GaugeRegistry | null },
): Promise<Channels> {
  const builtIn = createBuiltInChannels(deps);
  if (deps.gauges) builtIn.webhook?.sharePending(deps.gauges);
  const platform = { ...deps, registry: builtIn.registry };
  const telegram = await addTelegramChannel(platform);
  const slack = await addSlackChannel(platform);
  return { ...builtIn, telegram, slack };
}

/**
 * The channels capability: GET /channels and its state operations; the
 * WebSocket on the API server, and Telegram's webhook and Slack's Events
 * API on the webhook's port (the API's when the webhook is off); every
 * channel starts with the gateway and stops before the HTTP server.
 */
export function channelsModule(channels: Channels): GatewayModule {
  const { registry, websocket, webhook, telegram, slack } = channels;
  return {
    name: 'channels',
    routes: channelRoutes(registry),
    async mount(app) {
      await websocket.register(app);
      if (telegram?.webhook && webhook) webhook.mount((server) => registerTelegramWebhook(server, telegram));
      else if (telegram?.webhook) await registerTelegramWebhook(app, telegram);
      const events = slack?.events;
      if (events && webhook) webhook.mount((server) => registerSlackEvents(server, events));
      else if (events) await registerSlackEvents(app, events);
    },
    start: () => registry.startAll(),
    stop: { edges: () => registry.stopAll() },
  };
}
