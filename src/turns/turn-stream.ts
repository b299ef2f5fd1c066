import type { RequestContext } from '../http/route.js';
import { openSse } from '../http/sse.js';
import { outcomeError } from './outcome.js';
import type { TurnEvent, TurnEventType } from './turn-events.js';
import { PAUSED_STATUSES, type FollowOptions, type FollowStep } from './turn-follow.js';
import { turnOutcomeMessage } from './turns.presenter.js';

/**
 * What an SSE event carries (DECISIONS §5): `done` carries the Message itself,
 * `error` the error object; the other events their data as published.
 */
function wireData(event: TurnEvent): unknown {
  if (event.type === 'done') return event.data.message ?? event.data;
  if (event.type === 'error') return event.data.error ?? event.data;
  return event.data;
}

/** How a turn is written as SSE. */
export interface SseTurnOptions {
  /** Replay after this sequence number (`Last-Event-ID`). */
  afterSeq: number;
  /** Event types written (others are followed but not sent); all when absent. */
  types?: ReadonlySet<TurnEventType>;
  /** Write `id:` lines, so `Last-Event-ID` can resume. */
  withIds: boolean;
  /**
   * The reply stream of one message: a pause in `waiting_approval`/
   * `waiting_clarification` ends the stream with `done` carrying the waiting
   * Message, as the JSON answer does.
   */
  endOnPause?: boolean;
}

/**
 * Streams a turn's events as SSE (DECISIONS §5) through the message path's
 * `follow`: stored events after `afterSeq`, then live ones, until `done` or
 * `error`. A turn that ended without a final event in the stream still ends
 * it with the ledger's outcome, unless the client resumed after the end.
 */
export async function streamTurnEvents(
  ctx: RequestContext,
  follow: (eventId: string, options: FollowOptions) => AsyncIterable<FollowStep>,
  eventId: string,
  options: SseTurnOptions,
): Promise<void> {
  const sse = openSse(ctx);
  const idOf = (event: TurnEvent) => (options.withIds ? event.seq : undefined);
  try {
    for await (const step of follow(eventId, {
      fromSeq: options.afterSeq,
      endOnPause: options.endOnPause ?? false,
      signal: sse.signal,
    })) {
      if (step.kind === 'event') {
        const { event } = step;
        if (
          event.type === 'status' &&
          options.endOnPause &&
          step.live &&
          PAUSED_STATUSES.has(String(event.data.status))
        ) {
          sse.send('done', event.data.message ?? event.data, idOf(event));
        } else if (!options.types || options.types.has(event.type)) {
          sse.send(event.type, wireData(event), idOf(event));
        }
      } else if (step.kind === 'end' && !step.seen) {
        const error = outcomeError(step.turn);
        if (error) sse.send('error', { ...error, details: { event_id: eventId } });
        else sse.send('done', turnOutcomeMessage(step.turn));
      }
    }
  } catch {
    sse.send('error', { code: 'UNAVAILABLE', message: 'storage unavailable' });
  }
  sse.close();
}
