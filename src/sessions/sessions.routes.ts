import { errors } from '../http/errors.js';
import { created, defineRoute, type Principal, type RouteDef } from '../http/route.js';
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
import { ownerScope } from './session-owner.js';
import type { SessionOrigin } from './sessions.repo.js';
import type { SessionService } from './sessions.service.js';

/** Who a session created through the API belongs to and which agent runs it (agents/ decides; 403/404 thrown). */
export type SessionOriginPolicy = (request: { principal: Principal; channel: string; agent?: string }) => SessionOrigin;

export interface SessionRoutesDeps {
  service: SessionService;
  /** Absent: `main`, owned by `default` (one agent, one owner). */
  originOf?: SessionOriginPolicy;
}

/** Sessions API (spec: Sessions; DECISIONS §2, §5). */
export function sessionRoutes(deps: SessionRoutesDeps): RouteDef[] {
  const { service } = deps;
  return [
    defineRoute({
      method: 'GET',
      path: '/sessions',
      permission: 'api',
      summary: 'List sessions, newest activity first (cursor pagination); `q` searches their messages',
      tags: ['sessions'],
      query: listQuery,
      responses: [{ status: 200, description: 'One page of sessions', schema: sessionListSchema }],
      handler: async (ctx, { query }) => {
        const cursor = query.cursor === undefined ? null : decodeCursor(query.cursor);
        // An api principal lists its own sessions; an admin every one, or one principal's with ?principal=.
        const principal = ownerScope(ctx.principal) ?? query.principal;
        if (query.cursor !== undefined && !cursor)
          throw errors.validation([{ path: 'query.cursor', message: 'invalid cursor' }]);
        const page = await service.list({
          channel: query.channel ?? null,
          ...(principal !== undefined ? { principal } : {}),
          status: query.status ?? 'all',
          limit: query.limit,
          cursor,
          q: query.q ?? null,
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
      responses: [
        { status: 201, description: 'The created session', schema: sessionSchema },
        { status: 403, description: 'The token may not use the agent asked for' },
        { status: 404, description: 'No such agent' },
      ],
      handler: async (ctx, { body }) => {
        const channel = body?.channel ?? 'api';
        const origin =
          deps.originOf?.({ principal: ctx.principal, channel, ...(body?.agent ? { agent: body.agent } : {}) }) ?? {};
        const session = await service.create({ channel, metadata: body?.metadata ?? {}, ...origin });
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
      handler: async (ctx, { params }) =>
        presentSession(await service.withTitle(await service.require(params.session_id, ownerScope(ctx.principal)))),
    }),
    defineRoute({
      method: 'DELETE',
      path: '/sessions/:session_id',
      permission: 'api',
      summary: 'Delete a session: messages and context go, memory stays; the key starts a new context epoch',
      tags: ['sessions'],
      params: sessionParams,
      responses: [{ status: 200, description: 'Deleted', schema: sessionDeletedSchema }],
      handler: async (ctx, { params }) => {
        await service.require(params.session_id, ownerScope(ctx.principal));
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
      handler: async (ctx, { params, query }) => {
        const session = await service.require(params.session_id, ownerScope(ctx.principal));
        const page = await service.history(session, query.limit);
        return { items: page.items.map(presentHistoryEntry), total: page.total, returned: page.items.length };
      },
    }),
  ];
}
