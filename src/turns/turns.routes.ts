import { z } from 'zod';
import { getSession, ownerScope } from '../sessions/index.js';
import { errors } from '../http/errors.js';
import { defineRoute, HANDLED, HttpResult, type RouteDef } from '../http/route.js';
import { lastEventIdOf, SSE_NOTHING_LEFT } from '../http/sse.js';
import { q } from '../http/validation.js';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { PendingState } from '../runtime/index.js';
import type { Store } from '../store/index.js';
import type { FollowOptions } from './turn-follow.js';
import type { TurnStep } from './turn-steps.js';
import type { TurnQueue } from './turn-queue.js';
import { listTurnEvents } from './turn-events.repo.js';
import { resumedPastEnd, streamTurnEvents } from './turn-stream.js';
import { presentTurn } from './turns.presenter.js';
import { turnListSchema, turnPageSchema, turnSchema } from './turns.schema.js';
import { TURN_STATUSES } from './turn-status.js';
import { getTurn, listSessionTurns, listTurnsByStatus, resumeTurn } from './turns.repo.js';

const eventParams = z.object({ event_id: z.string().min(1) });

/** Turn ledger API (spec: Turn status; DECISIONS §5). Every read answers 503 when the store is unavailable. */
export function turnRoutes(deps: {
  store: Store;
  /** The message path's follow (replay + live). */
  follow: (eventId: string, options: FollowOptions) => AsyncIterable<TurnStep>;
  queue: TurnQueue;
  clock: Clock;
  owner: string;
}): RouteDef[] {
  const { store } = deps;
  /** The turn; 404 when there is none, or when its session is not the caller's (`scope`, DECISIONS §18). */
  const requireTurn = async (eventId: string, scope: string | null = null) => {
    const turn = await getTurn(store.db, eventId);
    if (!turn) throw errors.notFound('turn');
    if (scope !== null && (await getSession(store.db, turn.sessionKey))?.principal !== scope) {
      throw errors.notFound('turn');
    }
    return turn;
  };
  const resolve = (resolution: 'approve' | 'deny') =>
    defineRoute({
      method: 'POST',
      path: `/turns/:event_id/${resolution}`,
      permission: 'admin',
      summary:
        resolution === 'approve'
          ? 'Approve the tool call a turn is waiting on'
          : 'Deny the tool call a turn is waiting on',
      tags: ['turns'],
      params: eventParams,
      responses: [{ status: 200, description: 'The turn after the change (running again)', schema: turnSchema }],
      handler: async (_ctx, { params }) => {
        const turn = await requireTurn(params.event_id);
        if (turn.status !== 'waiting_approval') {
          throw errors.badRequest(`turn is ${turn.status}, not waiting_approval`, { status: turn.status });
        }
        const resumed = await store.writer.run((trx) =>
          resumeTurn(trx, params.event_id, {
            from: 'waiting_approval',
            owner: deps.owner,
            now: isoTime(deps.clock.now()),
          }),
        );
        if (!resumed) throw errors.badRequest('turn is no longer waiting_approval');
        deps.queue.resume(turn.sessionKey, {
          kind: 'resume',
          eventId: turn.eventId,
          resolution,
          pending: turn.pending as PendingState,
        });
        return presentTurn(resumed);
      },
    });
  return [
    defineRoute({
      method: 'GET',
      path: '/turns',
      permission: 'admin',
      summary:
        'Turns in some statuses across every session, oldest first: by default the paused ones ' +
        "(`waiting_approval,waiting_clarification`); page on with `after` = the previous page's `next_after`",
      tags: ['turns'],
      query: z.object({
        status: q.listOf(TURN_STATUSES, ['waiting_approval', 'waiting_clarification']),
        limit: q.int(1, 200, 50),
        after: q.optionalInt(0, Number.MAX_SAFE_INTEGER),
      }),
      responses: [{ status: 200, description: 'The turns, oldest first', schema: turnPageSchema }],
      handler: async (_ctx, { query }) => {
        const turns = await listTurnsByStatus(store.db, query.status, {
          limit: query.limit,
          ...(query.after !== undefined ? { afterSeq: query.after } : {}),
        });
        return {
          items: turns.map(presentTurn),
          next_after: turns.length === query.limit ? (turns.at(-1)?.seq ?? null) : null,
        };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/turns/:event_id',
      permission: 'admin',
      summary: 'One turn record',
      tags: ['turns'],
      params: eventParams,
      responses: [{ status: 200, description: 'The turn record', schema: turnSchema }],
      handler: async (_ctx, { params }) => presentTurn(await requireTurn(params.event_id)),
    }),
    defineRoute({
      method: 'GET',
      path: '/sessions/:session_id/turns',
      permission: 'admin',
      summary: "A session's turns, newest first",
      tags: ['turns'],
      params: z.object({ session_id: z.string().min(1) }),
      query: z.object({ limit: q.int(1, 100, 20) }),
      responses: [{ status: 200, description: "The session's turns, newest first", schema: turnListSchema }],
      handler: async (_ctx, { params, query }) => ({
        items: (await listSessionTurns(store.db, params.session_id, query.limit)).map(presentTurn),
      }),
    }),
    defineRoute({
      method: 'GET',
      path: '/turns/:event_id/events',
      permission: 'api',
      summary: "SSE: a turn's events so far, then live to the end; resumable with Last-Event-ID",
      tags: ['turns'],
      params: eventParams,
      responses: [
        {
          status: 200,
          description:
            'Every event so far (each with an `id:`), then live to the end: `status`, `delta`, `tool_call`, ' +
            '`tool_result`, `done` or `error`; a `: ping` comment every 15 s',
          contentType: 'text/event-stream',
        },
        { status: 204, description: 'Resumed (Last-Event-ID) after the end: nothing left to send' },
      ],
      handler: async (ctx, { params }) => {
        const turn = await requireTurn(params.event_id, ownerScope(ctx.principal));
        const lastId = lastEventIdOf(ctx);
        let afterSeq = 0;
        if (lastId !== null) {
          if (!/^\d{1,9}$/.test(lastId)) throw errors.badRequest('Last-Event-ID must be an event number');
          afterSeq = Number(lastId);
          // Resumed after the end: 204, so an EventSource stops reconnecting (ADR 0017).
          const from = await listTurnEvents(store.db, params.event_id, afterSeq - 1, 2);
          if (resumedPastEnd(turn, afterSeq, from)) return new HttpResult(SSE_NOTHING_LEFT, null);
        }
        await streamTurnEvents(ctx, deps.follow, params.event_id, { afterSeq, withIds: true });
        return HANDLED;
      },
    }),
    resolve('approve'),
    resolve('deny'),
  ];
}
