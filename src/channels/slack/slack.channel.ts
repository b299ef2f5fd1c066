import { platformChannelOf, type PlatformChannel, type PlatformDeps } from '../platform/platform.channel.js';
import { SLACK } from './slack.event.js';
import { handleSlackEvents, refuseSlackHeaders } from './slack.events.js';
import type { SlackEventsEndpoint } from './slack.routes.js';
import type { SlackTransport } from './slack.transport.js';

/** The Slack channel: a platform channel plus its Events API endpoint. */
export interface SlackChannel extends PlatformChannel {
  readonly transport: SlackTransport;
  /** The Events API endpoint (`events_path`), served by the gateway; null without a signing secret. */
  readonly events: SlackEventsEndpoint | null;
}

/** What the Slack channel is built from. */
export type SlackChannelOptions = PlatformDeps;

/**
 * Builds the Slack channel (DECISIONS §16) and adds it to the registry,
 * enabled as configured, when a bot token is set; null (nothing added)
 * without one. Socket Mode when `app_token` is set, else the Events API
 * over HTTP, which needs `signing_secret` (refused at start without it).
 * The endpoint is served by whoever mounts `events` (see `slack.routes.ts`).
 */
export async function addSlackChannel(options: SlackChannelOptions): Promise<SlackChannel | null> {
  const config = options.config.channels.slack;
  if (!config.bot_token) {
    if (config.enabled) options.logger.warn({ source: SLACK }, 'slack enabled without a bot token: not started');
    return null;
  }
  // Slack's clients are loaded only when a bot token is set: a gateway without Slack does not carry them.
  const { createSlackTransport } = await import('./slack.transport.js');
  const transport = createSlackTransport({
    botToken: config.bot_token,
    appToken: config.app_token,
    apiUrl: config.api_url,
    logger: options.logger.child({ source: SLACK }),
  });
  const platform = platformChannelOf(options, transport, config.groups);
  const secret = config.signing_secret;
  const events: SlackEventsEndpoint | null = secret
    ? {
        path: config.events_path,
        refuse: (headers) => refuseSlackHeaders(headers, { secret, nowMs: options.clock.now() }),
        handle: (request) =>
          handleSlackEvents(request, { secret, nowMs: options.clock.now(), deliver: transport.eventsReceiver() }),
      }
    : null;
  const channel: SlackChannel = {
    ...platform,
    name: SLACK,
    transport,
    events,
    start: () => {
      if (!config.app_token && !secret) {
        return Promise.reject(new Error('slack needs channels.slack.signing_secret (Events API) or app_token'));
      }
      return platform.start();
    },
  };
  options.registry.add(channel, config.enabled);
  return channel;
}
