import { errors } from '../http/errors.js';
import { created, defineRoute, type RouteDef } from '../http/route.js';
import { decodeCursor, encodeCursor, presentHistoryEntry, presentSession } from './sessions.presenter.js';
import {
  createBody,
  historyQuery,
  historySchema,
  listQuery,
  sessionDeletedSchema,
  sessionListSchema,
  sessionParams,
  sessionSchema,
} from './sessions.schema.js';
import type { SessionService } from './sessions.service.js';

export interface SessionRoutesDeps {
  service: SessionService;
}

/** Sessions API (spec: Sessions; DECISIONS §2, §5). */
export function sessionRoutes(deps: SessionRoutesDeps): RouteDef[] {
  const { service } = deps;
  return [
    defineRoute({
      method: 'GET',
      path: '/sessions',
      permission: 'api',
      summary: 'List sessions, newest activity first (cursor pagination)',
      tags: ['sessions'],
      query: listQuery,
      responses: [{ status: 200, description: 'One page of sessions', schema: sessionListSchema }],
      handler: async (_ctx, { query }) => {
        const cursor = query.cursor === undefined ? null : decodeCursor(query.cursor);
        if (query.cursor !== undefined && !cursor)
          throw errors.validation([{ path: 'query.cursor', message: 'invalid cursor' }]);
        const page = await service.list({
          channel: query.channel ?? null,
          status: query.status ?? 'all',
          limit: query.limit,
          cursor,
        });
        return {
          items: page.items.map(presentSession),
          pagination: {
            cursor: page.nextCursor ? encodeCursor(page.nextCursor) : null,
            has_more: page.hasMore,
            total: page.total,
          },
        };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/sessions',
      permission: 'api',
      summary: 'Create a session',
      tags: ['sessions'],
      body: createBody,
      responses: [{ status: 201, description: 'The created session', schema: sessionSchema }],
      handler: async (_ctx, { body }) => {
        const session = await service.create({ channel: body?.channel ?? 'api', metadata: body?.metadata ?? {} });
        return created(presentSession(session));
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/sessions/:session_id',
      permission: 'api',
      summary: 'One session',
      tags: ['sessions'],
      params: sessionParams,
      responses: [{ status: 200, description: 'The session', schema: sessionSchema }],
      handler: async (_ctx, { params }) => presentSession(await service.require(params.session_id)),
    }),
    defineRoute({
      method: 'DELETE',
      path: '/sessions/:session_id',
      permission: 'api',
      summary: 'Delete a session: messages and context go, memory stays; the key starts a new context epoch',
      tags: ['sessions'],
      params: sessionParams,
      responses: [{ status: 200, description: 'Deleted', schema: sessionDeletedSchema }],
      handler: async (_ctx, { params }) => {
        await service.delete(params.session_id);
        return { id: params.session_id, deleted: true };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/sessions/:session_id/history',
      permission: 'api',
      summary: 'The newest history entries, in chronological order',
      tags: ['sessions'],
      params: sessionParams,
      query: historyQuery,
      responses: [{ status: 200, description: 'The newest entries, oldest first', schema: historySchema }],
      handler: async (_ctx, { params, query }) => {
        const session = await service.require(params.session_id);
        const page = await service.history(session, query.limit);
        return { items: page.items.map(presentHistoryEntry), total: page.total, returned: page.items.length };
      },
    }),
  ];
}
