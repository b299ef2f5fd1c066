/**
 * Channels (spec: Channels; DECISIONS §7, §8): the registry and its API, and
 * the built-in channels — the WebSocket on the API server and the webhook
 * on its own server. Every channel hands its messages to the message path.
 */
export { type Channel, type ChannelStats } from './channel.js';
export { ChannelRegistry } from './channel-registry.js';
export { channelRoutes } from './channels.routes.js';
export {
  createWebhookChannel,
  WEBHOOK_IDEMPOTENCY_CACHE,
  type WebhookChannel,
  type WebhookChannelOptions,
} from './webhook/webhook.channel.js';
export {
  createWebSocketChannel,
  DEFAULT_WEBSOCKET_LIMITS,
  type WebSocketChannel,
  type WebSocketChannelOptions,
  type WebSocketLimits,
} from './websocket/websocket.channel.js';
export { createBuiltInChannels, type BuiltInChannels } from './built-in.js';
export { addTelegramChannel, type TelegramChannel } from './telegram/telegram.channel.js';
export { registerTelegramWebhook } from './telegram/telegram.routes.js';
export { addSlackChannel, type SlackChannel } from './slack/slack.channel.js';
export { registerSlackEvents } from './slack/slack.routes.js';
export { buildWebhookOpenApi } from './webhook/webhook.openapi.js';
export {
  authFrame,
  interruptFrame,
  messageFrame,
  pingFrame,
  subscribeFrame,
  unsubscribeFrame,
  type ServerFrame,
} from './websocket/websocket.frames.js';
export { SERVER_FRAMES, type DescribedServerFrame } from './websocket/websocket.server-frames.js';
export { channelsModule, openChannels, type Channels } from './channels.module.js';
