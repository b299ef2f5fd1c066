import { z } from 'zod';
import type { ChannelView } from './channel.js';

/**
 * The wire shape of a channel (spec: Channels, variant A; `ChannelView` in
 * `channel.ts`), describing the channels API's answers in the OpenAPI
 * document (ADR 0016).
 */
export const channelSchema = z
  .object({
    name: z.string(),
    enabled: z.boolean(),
    connected: z.boolean(),
    uptime_seconds: z.number().int().min(0),
    messages_today: z.number().int().min(0),
    last_message_at: z.string().nullable().meta({ description: 'ISO 8601 UTC' }),
    error: z.string().nullable().meta({ description: 'Why the channel is not connected, when it failed' }),
    last_connected_at: z.string().nullable().meta({ description: 'ISO 8601 UTC' }),
  })
  .meta({ id: 'Channel' }) satisfies z.ZodType<ChannelView>;

/** GET /channels. */
export const channelListSchema = z.object({ items: z.array(channelSchema) });
