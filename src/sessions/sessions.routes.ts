import { z } from 'zod';
import { errors } from '../http/errors.js';
import { created, defineRoute, HANDLED, type RouteDef } from '../http/route.js';
import { objectBody, q } from '../http/validation.js';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { Store } from '../store/index.js';
import type { Intake } from '../turns/intake.js';
import { awaitOutcome, submitMessage, throwIfFailed } from '../turns/message-submit.js';
import type { TurnEventHub } from '../turns/turn-events.js';
import { streamTurnEvents } from '../turns/turn-stream.js';
import type { TurnWaiters } from '../turns/turn-waiters.js';
import { turnOutcomeMessage } from '../turns/turns.presenter.js';
import { decodeCursor, encodeCursor, presentHistoryEntry, presentSession } from './sessions.presenter.js';
import { createSession, deleteSession, getSession, history, listSessions } from './sessions.repo.js';

const sessionParams = z.object({ session_id: z.string().min(1) });
const MESSAGE_STREAM_TYPES = new Set(['delta', 'tool_call', 'tool_result', 'done', 'error'] as const);

export interface SessionRoutesDeps {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  intake: Intake;
  waiters: TurnWaiters;
  hub: TurnEventHub;
  /** How long POST /sessions/{id}/messages waits for its turn by default. */
  replyTimeoutMs: number;
}

/** Sessions API (spec: Sessions; DECISIONS §2, §5). */
export function sessionRoutes(deps: SessionRoutesDeps): RouteDef[] {
  const { store } = deps;
  const requireSession = async (key: string) => {
    const session = await getSession(store.db, key);
    if (!session) throw errors.notFound('session');
    return session;
  };
  return [
    defineRoute({
      method: 'GET',
      path: '/sessions',
      permission: 'api',
      summary: 'List sessions, newest activity first (cursor pagination)',
      tags: ['sessions'],
      query: z.object({
        channel: z.string().min(1).optional(),
        status: z.enum(['active', 'archived', 'all']).optional(),
        limit: q.int(1, 100, 20),
        cursor: z.string().min(1).optional(),
      }),
      handler: async (_ctx, { query }) => {
        const cursor = query.cursor === undefined ? null : decodeCursor(query.cursor);
        if (query.cursor !== undefined && !cursor)
          throw errors.validation([{ path: 'query.cursor', message: 'invalid cursor' }]);
        const page = await listSessions(store.db, {
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
      body: objectBody({
        channel: z
          .string()
          .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, _ . - (1..64)')
          .optional(),
        metadata: z.record(z.string(), z.unknown()).optional(),
      }).optional(),
      handler: async (_ctx, { body }) => {
        const channel = body?.channel ?? 'api';
        const key = `gateway:${channel}:${deps.ids.next('chat')}`;
        const now = isoTime(deps.clock.now());
        const session = await store.writer.run((trx) =>
          createSession(trx, { key, channel, metadata: body?.metadata ?? {}, now }),
        );
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
      handler: async (_ctx, { params }) => presentSession(await requireSession(params.session_id)),
    }),
    defineRoute({
      method: 'DELETE',
      path: '/sessions/:session_id',
      permission: 'api',
      summary: 'Delete a session: messages and context go, memory stays; the key starts a new context epoch',
      tags: ['sessions'],
      params: sessionParams,
      handler: async (_ctx, { params }) => {
        const now = isoTime(deps.clock.now());
        const deleted = await store.writer.run((trx) => deleteSession(trx, params.session_id, now));
        if (!deleted) throw errors.notFound('session');
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
      query: z.object({ limit: q.int(1, 500, 100) }),
      handler: async (_ctx, { params, query }) => {
        const session = await requireSession(params.session_id);
        const page = await history(store.db, session.key, session.contextEpoch, query.limit);
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
      query: z.object({ timeout_seconds: q.optionalInt(1, 600) }),
      body: objectBody({
        content: z.string({ error: 'content is required' }).min(1, 'content must not be empty'),
        role: z.literal('user', { error: 'role must be "user"' }).optional(),
      }),
      handler: async (ctx, { params, body, query }) => {
        const session = await requireSession(params.session_id);
        const chatId = session.key.split(':').slice(2).join(':') || session.key;
        const result = await submitMessage(deps.intake, {
          principal: ctx.principal,
          sessionKey: session.key,
          headers: ctx.request.headers,
          wait: true,
          payload: {
            text: body.content,
            platform: session.channel,
            user_id: ctx.principal.fingerprint ?? 'anonymous',
            chat_id: chatId,
            channel: session.channel,
            source: 'session',
          },
        });
        const accept = String(ctx.request.headers.accept ?? '');
        if (accept.includes('text/event-stream')) {
          await streamTurnEvents(ctx, deps, result.eventId, {
            afterSeq: 0,
            types: MESSAGE_STREAM_TYPES,
            withIds: false,
            endOnPause: true,
          });
          return HANDLED;
        }
        const timeoutMs = query.timeout_seconds ? query.timeout_seconds * 1000 : deps.replyTimeoutMs;
        const turn = await awaitOutcome(deps.waiters, result.eventId, timeoutMs, ctx.signal);
        throwIfFailed(turn);
        return turnOutcomeMessage(turn);
      },
    }),
  ];
}
