import type { TurnEvent, TurnEventHub } from './turn-events.js';
import type { TurnWaiters } from './turn-waiters.js';
import type { TurnRecord } from './turns.repo.js';

import { PAUSED_STATUSES } from './turn-status.js';
export { PAUSED_STATUSES };

/** How to follow a turn. */
export interface FollowOptions {
  /** Replay only events after this sequence number (`Last-Event-ID`); 0 for all. */
  fromSeq: number;
  /**
   * The reply to one message: a live pause (`waiting_approval`,
   * `waiting_clarification`) ends the follow, and so does a ledger that
   * shows the turn paused. Without it only a terminal status ends it.
   */
  endOnPause: boolean;
  /** Longest time to follow before a `timeout` step (the turn goes on); default no bound but Node's timer limit. */
  timeoutMs?: number;
  /** Stops following (the client went away): the iteration simply ends. */
  signal?: AbortSignal;
  /** Live events held while the stored ones are replayed (default 10 000; more are dropped). */
  maxBufferedEvents?: number;
  /**
   * Told the approximate size in bytes (as JSON) of the live events held for
   * the follower — heard but not yet taken, because it is replaying or has
   * stopped to let its client catch up — each time it changes. A stream adds
   * them to its unsent bytes (`SseStream.holding`).
   */
  onHeld?: (bytes: number) => void;
}

/** Stored events replayed per read of the store, so a follower that waits for its client holds one page. */
const REPLAY_PAGE = 500;

/** The size of an event as JSON, once per event however many follow it. */
const eventSizes = new WeakMap<TurnEvent, number>();
function sizeOf(event: TurnEvent): number {
  let size = eventSizes.get(event);
  if (size === undefined) {
    size = JSON.stringify(event.data).length + 48; // the data plus the frame: id, event name, separators
    eventSizes.set(event, size);
  }
  return size;
}

/**
 * One step of a follow. `event`: a turn event, replayed (`live: false`) or
 * live; a `done`/`error` event, or a live pause with `endOnPause`, is the last
 * step. `end`: the ledger shows the turn over (or paused, with `endOnPause`)
 * although no final event came — it ended without one, elsewhere, or its
 * pause was replayed; `seen` when the follower resumed at or after the last
 * stored event — which need not be a final one, so SSE still writes the
 * ledger's end (ADR 0017). `timeout`: `timeoutMs` passed.
 */
export type FollowStep =
  | { kind: 'event'; event: TurnEvent; live: boolean }
  | { kind: 'end'; turn: TurnRecord; seen: boolean }
  | { kind: 'timeout' };

/** What following needs: the hub (live + stored events), the waiters (the ledger's outcome), the last stored seq. */
export interface FollowDeps {
  hub: Pick<TurnEventHub, 'subscribe' | 'flush' | 'replay'>;
  waiters: Pick<TurnWaiters, 'wait'>;
  /** The sequence number of a turn's last stored event (0 when none). */
  lastSeq(eventId: string): Promise<number>;
}

function endsFollow(event: TurnEvent, live: boolean, endOnPause: boolean): boolean {
  if (event.type === 'done' || event.type === 'error') return true;
  return live && endOnPause && event.type === 'status' && PAUSED_STATUSES.has(String(event.data.status));
}

/**
 * Follows one turn to its end: subscribes to its live events first (they
 * are held), flushes pending writes, replays the stored events after
 * `fromSeq`, then releases the held ones and goes on live — so no event
 * falls in between and none is yielded twice (by `seq`). Meanwhile the
 * ledger is watched through the waiters, which also covers a turn that ends
 * in another process or without a final event. A gap in the live numbers (an
 * event of another process lost on the bus), and what the ledger's end leaves
 * unheard, are read from the store. Used by SSE, the WebSocket and every
 * other follower.
 */
export async function* followTurn(
  deps: FollowDeps,
  eventId: string,
  options: FollowOptions,
): AsyncGenerator<FollowStep> {
  const maxBuffered = options.maxBufferedEvents ?? 10_000;
  const held: TurnEvent[] = [];
  const { onHeld } = options;
  let heldBytes = 0;
  const take = (): TurnEvent => {
    const event = held.shift()!;
    if (onHeld) {
      heldBytes -= sizeOf(event);
      onHeld(heldBytes);
    }
    return event;
  };
  let wake: (() => void) | null = null;
  const poke = (): void => {
    const resolve = wake;
    wake = null;
    resolve?.();
  };
  const unsubscribe = deps.hub.subscribe(eventId, (event) => {
    if (held.length < maxBuffered) {
      held.push(event);
      if (onHeld) {
        heldBytes += sizeOf(event);
        onHeld(heldBytes);
      }
    }
    poke();
  });
  const stop = new AbortController();
  // The follower goes away (its client left or was cut for not reading): its subscription, the ledger watch
  // and the events held for it are let go at once, not when the iteration is next resumed.
  const abort = (): void => {
    unsubscribe();
    held.length = 0;
    heldBytes = 0;
    stop.abort();
    poke();
  };
  if (options.signal?.aborted) abort();
  else options.signal?.addEventListener('abort', abort, { once: true });
  let lastSeq = options.fromSeq;
  try {
    await deps.hub.flush();
    for (;;) {
      const page = await deps.hub.replay(eventId, lastSeq, REPLAY_PAGE);
      for (const event of page) {
        if (stop.signal.aborted) return;
        if (event.seq <= lastSeq) continue;
        lastSeq = event.seq;
        yield { kind: 'event', event, live: false };
        if (endsFollow(event, false, options.endOnPause)) return;
      }
      if (page.length < REPLAY_PAGE) break;
    }
    if (stop.signal.aborted) return;

    /** Set by the ledger watch (closures: read through the object, not narrowed locals). */
    const watch: { outcome?: { turn: TurnRecord | null }; failure?: Error } = {};
    deps.waiters
      .wait(
        eventId,
        options.timeoutMs ?? Number.MAX_SAFE_INTEGER,
        stop.signal,
        options.endOnPause ? 'outcome' : 'terminal',
      )
      .then(
        (turn) => {
          watch.outcome = { turn };
          poke();
        },
        (err: unknown) => {
          watch.failure = err instanceof Error ? err : new Error(String(err));
          poke();
        },
      );
    /**
     * Stored events after `lastSeq` (and before `beforeSeq`) that were not
     * heard live: another process's lost on the bus (ADR 0025), held ones dropped.
     */
    const missed = async function* (beforeSeq?: number): AsyncGenerator<TurnEvent> {
      const limit = beforeSeq === undefined ? undefined : beforeSeq - lastSeq - 1;
      for (const event of await deps.hub.replay(eventId, lastSeq, limit)) {
        if (stop.signal.aborted) return;
        if (event.seq <= lastSeq || (beforeSeq !== undefined && event.seq >= beforeSeq)) continue;
        lastSeq = event.seq;
        yield event;
      }
    };
    for (;;) {
      while (held.length > 0 && !stop.signal.aborted) {
        const event = take();
        if (event.seq <= lastSeq) continue;
        if (event.seq > lastSeq + 1) {
          for await (const earlier of missed(event.seq)) {
            yield { kind: 'event', event: earlier, live: false };
            if (endsFollow(earlier, false, options.endOnPause)) return;
          }
        }
        lastSeq = event.seq;
        yield { kind: 'event', event, live: true };
        if (endsFollow(event, true, options.endOnPause)) return;
      }
      if (stop.signal.aborted) return;
      if (watch.failure) throw watch.failure;
      const settled = watch.outcome;
      if (settled) {
        if (!settled.turn) {
          yield { kind: 'timeout' };
          return;
        }
        for await (const earlier of missed()) {
          yield { kind: 'event', event: earlier, live: false };
          if (endsFollow(earlier, false, options.endOnPause)) return;
        }
        const stored = await deps.lastSeq(eventId);
        yield { kind: 'end', turn: settled.turn, seen: stored > 0 && stored <= options.fromSeq };
        return;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
  } finally {
    options.signal?.removeEventListener('abort', abort);
    unsubscribe();
    stop.abort();
  }
}
