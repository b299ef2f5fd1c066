import type { RequestContext } from '../http/route.js';
import { openSse } from '../http/sse.js';
import type { Store } from '../store/index.js';
import type { TurnEvent, TurnEventHub, TurnEventType } from './turn-events.js';
import { getTurn, isTerminalStatus } from './turns.repo.js';
import { turnOutcomeMessage } from './turns.presenter.js';

/**
 * Streams a turn's events as SSE: replays what is stored after `afterSeq`,
 * then follows live events until `done` or `error`. Subscribing before the
 * replay (and flushing pending writes) means no event falls in between.
 */
export async function streamTurnEvents(
  ctx: RequestContext,
  deps: { hub: TurnEventHub; store: Store },
  eventId: string,
  options: { afterSeq: number; types?: ReadonlySet<TurnEventType>; withIds: boolean },
): Promise<void> {
  const { hub, store } = deps;
  const sse = openSse(ctx);
  let lastSent = options.afterSeq;
  let live = false;
  const buffered: TurnEvent[] = [];
  const send = (event: TurnEvent): void => {
    if (sse.closed || event.seq <= lastSent) return;
    lastSent = event.seq;
    if (!options.types || options.types.has(event.type)) {
      sse.send(event.type, event.data, options.withIds ? event.seq : undefined);
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
    // A turn that ended without a stored final event (e.g. before events were kept) still ends the stream.
    const turn = await getTurn(store.db, eventId);
    if (turn && isTerminalStatus(turn.status) && !sse.closed) {
      const message = turnOutcomeMessage(turn);
      sse.send('done', { status: turn.status, message });
      sse.close();
    }
  } catch (err) {
    sse.send('error', { error: { code: 'UNAVAILABLE', message: 'storage unavailable' } });
    sse.close();
    void err;
  }
}
