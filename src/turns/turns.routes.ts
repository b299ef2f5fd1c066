import { z } from 'zod';
import { errors } from '../http/errors.js';
import { defineRoute, HANDLED, type RouteDef } from '../http/route.js';
import { q } from '../http/validation.js';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { PendingState } from '../runtime/index.js';
import type { Store } from '../store/index.js';
import type { FollowOptions, FollowStep } from './turn-follow.js';
import type { TurnQueue } from './turn-queue.js';
import { streamTurnEvents } from './turn-stream.js';
import { presentTurn } from './turns.presenter.js';
import { getTurn, listSessionTurns, resumeTurn } from './turns.repo.js';

const eventParams = z.object({ event_id: z.string().min(1) });

/** Turn ledger API (spec: Turn status; DECISIONS §5). Every read answers 503 when the store is unavailable. */
export function turnRoutes(deps: {
  store: Store;
  /** The message path's follow (replay + live). */
  follow: (eventId: string, options: FollowOptions) => AsyncIterable<FollowStep>;
  queue: TurnQueue;
  clock: Clock;
  owner: string;
}): RouteDef[] {
  const { store } = deps;
  const requireTurn = async (eventId: string) => {
    const turn = await getTurn(store.db, eventId);
    if (!turn) throw errors.notFound('turn');
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
      path: '/turns/:event_id',
      permission: 'admin',
      summary: 'One turn record',
      tags: ['turns'],
      params: eventParams,
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
      handler: async (ctx, { params }) => {
        await requireTurn(params.event_id);
        const header = ctx.request.headers['last-event-id'];
        const lastId = Array.isArray(header) ? header[0] : header;
        let afterSeq = 0;
        if (lastId !== undefined && lastId !== '') {
          if (!/^\d{1,9}$/.test(lastId)) throw errors.badRequest('Last-Event-ID must be an event number');
          afterSeq = Number(lastId);
        }
        await streamTurnEvents(ctx, deps.follow, params.event_id, { afterSeq, withIds: true });
        return HANDLED;
      },
    }),
    resolve('approve'),
    resolve('deny'),
  ];
}
