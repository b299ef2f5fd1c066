import { z } from 'zod';
import { errors } from '../http/errors.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import type { ChannelRegistry } from './channel-registry.js';
import { channelListSchema, channelSchema } from './channels.schema.js';

const nameParams = z.object({ channel_name: z.string().min(1) });

/** Channels API (spec: Channels; DECISIONS §9): list, reconnect, disable, enable. */
export function channelRoutes(registry: ChannelRegistry): RouteDef[] {
  const operation = (op: 'reconnect' | 'disable' | 'enable', summary: string) =>
    defineRoute({
      method: 'POST',
      path: `/channels/:channel_name/${op}`,
      permission: 'admin',
      rateGroup: 'lifecycle',
      summary,
      tags: ['channels'],
      params: nameParams,
      responses: [{ status: 200, description: 'The channel after the change', schema: channelSchema }],
      handler: async (_ctx, { params }) => {
        const view = await registry[op](params.channel_name);
        if (!view) throw errors.notFound('channel');
        return view;
      },
    });
  return [
    defineRoute({
      method: 'GET',
      path: '/channels',
      permission: 'api',
      summary: 'Channels and their state',
      tags: ['channels'],
      responses: [{ status: 200, description: 'Every channel', schema: channelListSchema }],
      handler: () => ({ items: registry.list() }),
    }),
    defineRoute({
      method: 'GET',
      path: '/channels/:channel_name',
      permission: 'api',
      summary: 'One channel',
      tags: ['channels'],
      params: nameParams,
      responses: [{ status: 200, description: 'The channel', schema: channelSchema }],
      handler: (_ctx, { params }) => {
        const view = registry.get(params.channel_name);
        if (!view) throw errors.notFound('channel');
        return view;
      },
    }),
    operation('reconnect', 'Restart a channel'),
    operation('disable', 'Stop a channel (enabled: false, connected: false)'),
    operation('enable', 'Start a disabled channel again'),
  ];
}
