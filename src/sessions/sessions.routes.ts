import { errors } from '../http/errors.js';
import { created, defineRoute, HANDLED, type RouteDef } from '../http/route.js';
import { envelopeMessage, outcomeTimeout, streamTurnEvents, type MessagePath } from '../turns/index.js';
import { decodeCursor, encodeCursor, presentHistoryEntry, presentSession } from './sessions.presenter.js';
import {
  createBody,
  historyQuery,
  historySchema,
  listQuery,
  messageBody,
  messageQuery,
  sessionDeletedSchema,
  sessionListSchema,
  sessionMessageSchema,
  sessionParams,
  sessionSchema,
} from './sessions.schema.js';
import type { SessionService } from './sessions.service.js';

const MESSAGE_STREAM_TYPES = new Set(['delta', 'tool_call', 'tool_result', 'done', 'error'] as const);

export interface SessionRoutesDeps {
  service: SessionService;
  /** The message path's door. */
  messages: Pick<MessagePath, 'submit' | 'follow' | 'waitFor'>;
  /** How long POST /sessions/{id}/messages waits for its turn by default. */
  replyTimeoutMs: number;
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
    defineRoute({
      method: 'POST',
      path: '/sessions/:session_id/messages',
      permission: 'api',
      summary: 'Send a message and get the reply (SSE with Accept: text/event-stream)',
      tags: ['sessions'],
      params: sessionParams,
      query: messageQuery,
      body: messageBody,
      responses: [
        {
          status: 200,
          description: "The turn's Message once it ends or pauses (incomplete and interrupted turns too)",
          schema: sessionMessageSchema,
        },
        {
          status: 200,
          description:
            'With Accept: text/event-stream: `accepted`, then `delta`, `tool_call`, `tool_result`, and `done` ' +
            'with the Message or `error` with the error object; a `: ping` comment every 15 s',
          contentType: 'text/event-stream',
        },
      ],
      // 409: the key was used with other content; 502/500: the turn failed; 504: the wait ran out.
      errors: [409, 502, 504],
      handler: async (ctx, { params, body, query }) => {
        const session = await service.require(params.session_id);
        const chatId = session.key.split(':').slice(2).join(':') || session.key;
        const submitted = await deps.messages.submit({
          sessionKey: session.key,
          text: body.content,
          platform: session.channel,
          userId: ctx.principal.fingerprint ?? 'anonymous',
          chatId,
          channel: session.channel,
          source: 'session',
          principal: ctx.principal,
          // Addressed by session key under a token: no platform user speaks (DECISIONS §4 checks platform users).
          identity: 'skip',
          idempotency: { scope: 'principal', headers: ctx.request.headers },
          wait: true,
        });
        const accept = String(ctx.request.headers.accept ?? '');
        if (accept.includes('text/event-stream')) {
          await streamTurnEvents(ctx, (id, options) => deps.messages.follow(id, options), submitted.eventId, {
            afterSeq: 0,
            types: MESSAGE_STREAM_TYPES,
            withIds: true,
            endOnPause: true,
            accepted: { sessionKey: submitted.sessionKey },
          });
          return HANDLED;
        }
        const timeoutMs = query.timeout_seconds ? query.timeout_seconds * 1000 : deps.replyTimeoutMs;
        const turn = await deps.messages.waitFor(submitted.eventId, timeoutMs, ctx.signal);
        if (!turn) throw outcomeTimeout({ event_id: submitted.eventId });
        return envelopeMessage(turn);
      },
    }),
  ];
}
