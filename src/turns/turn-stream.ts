import type { AcceptedEvent } from './turns.stream-schema.js';
import type { RequestContext } from '../http/route.js';
import { openSse } from '../http/sse.js';
import type { TurnEventType } from './turn-events.js';
import type { FollowOptions } from './turn-follow.js';
import type { TurnStep } from './turn-steps.js';
import { isTerminalStatus } from './turn-status.js';
import type { TurnRecord } from './turns.repo.js';

function isFinal(type: string): boolean {
  return type === 'done' || type === 'error';
}

/** How a turn is written as SSE. */
export interface SseTurnOptions {
  /** Replay after this sequence number (`Last-Event-ID`). */
  afterSeq: number;
  /** Event types written (others are followed but not sent); all when absent. */
  types?: ReadonlySet<TurnEventType>;
  /** Write `id:` lines (the per-turn event number), so `Last-Event-ID` can resume. */
  withIds: boolean;
  /**
   * The reply stream of one message: a pause in `waiting_approval`/
   * `waiting_clarification` ends the stream with `done` carrying the waiting
   * Message, as the JSON answer does.
   */
  endOnPause?: boolean;
  /**
   * Starts the stream with `accepted` `{event_id, session_key}` (`id: 0`: no
   * event of the turn seen yet), so the client knows which turn to resume
   * through GET /turns/{event_id}/events (ADR 0017).
   */
  accepted?: { sessionKey: string };
}

/**
 * Whether a resumed stream of `turn` has nothing left to send, so the
 * answer is 204 and an `EventSource` stops reconnecting (ADR 0017): the turn
 * is over and the client has seen its end — the stored final event is at
 * `afterSeq`, or `afterSeq` is past every stored event (the end the ledger
 * gave, numbered one past them, or an id from nowhere). `from` are the
 * stored events numbered `afterSeq` and up, oldest first (two are enough).
 * `afterSeq` 0 (nothing seen) never qualifies.
 */
export function resumedPastEnd(
  turn: Pick<TurnRecord, 'status'>,
  afterSeq: number,
  from: readonly { seq: number; type: string }[],
): boolean {
  if (afterSeq <= 0 || !isTerminalStatus(turn.status)) return false;
  if (from.some((event) => event.seq > afterSeq)) return false;
  const at = from.find((event) => event.seq === afterSeq);
  return at === undefined || isFinal(at.type);
}

/**
 * Streams a turn's events as SSE (DECISIONS §5) through the message path's
 * `follow`: stored events after `afterSeq`, then live ones, until `done` or
 * `error`, and then the stream ends. A turn the ledger shows over (or
 * paused, with `endOnPause`) without a final event in the stream still ends
 * it with the ledger's outcome; with ids, that event is numbered one past
 * the last event seen for an ended turn (so resuming after it answers 204),
 * or with the last event seen for a paused one (resuming goes on with the
 * turn's next event).
 */
export async function streamTurnEvents(
  ctx: RequestContext,
  follow: (eventId: string, options: FollowOptions) => AsyncIterable<TurnStep>,
  eventId: string,
  options: SseTurnOptions,
): Promise<void> {
  const sse = openSse(ctx);
  const idOf = (seq: number) => (options.withIds ? seq : undefined);
  if (options.accepted) {
    const accepted: AcceptedEvent = { event_id: eventId, session_key: options.accepted.sessionKey };
    sse.send('accepted', accepted, idOf(0));
  }
  const sends = (type: TurnEventType) => !options.types || options.types.has(type);
  let lastSeq = options.afterSeq;
  /** Whether the last write left the socket full: the next step waits until the client has taken it. */
  let full = false;
  const send = (event: string, data: unknown, id: number | undefined): void => {
    if (!sse.send(event, data, id)) full = true;
  };
  try {
    for await (const step of follow(eventId, {
      fromSeq: options.afterSeq,
      endOnPause: options.endOnPause ?? false,
      signal: sse.signal,
      onHeld: (bytes) => sse.holding(bytes),
    })) {
      if (full) {
        // The client is behind: replayed events wait in the store, live ones are held and counted (ADR 0043).
        await sse.drained();
        full = false;
        if (sse.closed) break;
      }
      if (step.kind === 'timeout') continue;
      if (step.seq !== null) lastSeq = Math.max(lastSeq, step.seq);
      switch (step.kind) {
        case 'delta':
          if (sends('delta')) send('delta', { content: step.content }, idOf(step.seq));
          break;
        case 'tool_call':
          if (sends('tool_call')) {
            send('tool_call', { id: step.id, name: step.name, arguments: step.arguments }, idOf(step.seq));
          }
          break;
        case 'tool_result':
          if (sends('tool_result')) {
            send('tool_result', { id: step.id, name: step.name, result: step.result }, idOf(step.seq));
          }
          break;
        case 'status':
          if (sends('status')) send('status', step.data, idOf(step.seq));
          break;
        case 'paused':
          // The reply to one message ends with `done` carrying the waiting Message, as the JSON answer does;
          // from the ledger, numbered with the last event seen (resuming goes on with the turn's next event).
          send('done', step.message ?? { status: step.status }, idOf(step.seq ?? lastSeq));
          break;
        case 'ended': {
          // From the ledger, one past the last event seen, so resuming after it answers 204.
          const id = idOf(step.seq ?? lastSeq + 1);
          if (step.error) send('error', step.error, id);
          else send('done', step.message ?? { status: step.status }, id);
          break;
        }
      }
    }
  } catch {
    // No id: a client that reconnects resumes where it was once the store answers again.
    sse.send('error', { code: 'UNAVAILABLE', message: 'storage unavailable' });
  }
  sse.close();
}
