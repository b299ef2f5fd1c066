import type { RequestContext } from '../http/route.js';
import { openSse } from '../http/sse.js';
import type { Store } from '../store/index.js';
import type { TurnEvent, TurnEventHub, TurnEventType } from './turn-events.js';
import { lastTurnEventSeq } from './turn-events.repo.js';
import { getTurn, isTerminalStatus } from './turns.repo.js';
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

/** Statuses a turn pauses in (its stream may end there: see `endOnPause`). */
const PAUSED: ReadonlySet<string> = new Set(['waiting_approval', 'waiting_clarification']);

/**
 * Streams a turn's events as SSE: replays what is stored after `afterSeq`,
 * then follows live events until `done` or `error`. Subscribing before the
 * replay (and flushing pending writes) means no event falls in between.
 * With `endOnPause` (the reply stream of one message) a turn that pauses in
 * `waiting_approval`/`waiting_clarification` ends the stream with `done`
 * carrying the waiting Message, as the JSON answer does.
 */
export async function streamTurnEvents(
  ctx: RequestContext,
  deps: { hub: TurnEventHub; store: Store },
  eventId: string,
  options: { afterSeq: number; types?: ReadonlySet<TurnEventType>; withIds: boolean; endOnPause?: boolean },
): Promise<void> {
  const { hub, store } = deps;
  const sse = openSse(ctx);
  let lastSent = options.afterSeq;
  let live = false;
  const buffered: TurnEvent[] = [];
  const send = (event: TurnEvent): void => {
    if (sse.closed || event.seq <= lastSent) return;
    lastSent = event.seq;
    if (live && options.endOnPause && event.type === 'status' && PAUSED.has(String(event.data.status))) {
      sse.send('done', event.data.message ?? event.data, options.withIds ? event.seq : undefined);
      sse.close();
      return;
    }
    if (!options.types || options.types.has(event.type)) {
      sse.send(event.type, wireData(event), options.withIds ? event.seq : undefined);
    }
    if (event.type === 'done' || event.type === 'error') sse.close();
  };
  const unsubscribe = hub.subscribe(eventId, (event) => {
    if (live) send(event);
    else if (buffered.length < 10_000) buffered.push(event);
  });
  sse.signal.addEventListener('abort', unsubscribe, { once: true });
  try {
    await hub.flush();
    for (const event of await hub.replay(eventId, options.afterSeq)) send(event);
    live = true;
    for (const event of buffered.splice(0)) send(event);
    if (sse.closed) return;
    // A turn that ended without a stored final event (e.g. before events were kept) still ends the stream;
    // so does a reply stream whose turn is paused now (its pause event was replayed above).
    const turn = await getTurn(store.db, eventId);
    const ended = turn && (isTerminalStatus(turn.status) || (options.endOnPause && PAUSED.has(turn.status)));
    if (turn && ended && !sse.closed) {
      // A client resuming after the last stored event has seen the end already: just close.
      const lastSeq = await lastTurnEventSeq(store.db, eventId);
      if (!(lastSeq > 0 && lastSeq <= options.afterSeq)) {
        sse.send('done', turnOutcomeMessage(turn));
      }
      sse.close();
    }
  } catch {
    sse.send('error', { error: { code: 'UNAVAILABLE', message: 'storage unavailable' } });
    sse.close();
  }
}
