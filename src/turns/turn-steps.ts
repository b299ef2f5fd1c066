import { outcomeError } from './outcome.js';
import type { TurnEvent } from './turn-events.js';
import { PAUSED_STATUSES, type FollowStep } from './turn-follow.js';
import { turnOutcomeMessage } from './turns.presenter.js';
import type { TurnRecord } from './turns.repo.js';

/**
 * What following a turn yields to an entry point (the door's `follow`): steps
 * ready for a wire format, so no transport re-derives from raw events how a
 * turn ended or paused (ADR 0036). `seq` is the turn event's number (SSE `id:`,
 * `Last-Event-ID`); null for an end or pause the ledger reported without an
 * event.
 *
 * - `delta`, `tool_call`, `tool_result`: the turn's output as it happens.
 * - `status`: a status event that ends nothing (`running`; a replayed pause;
 *   any pause when the follow does not end on pauses). `data` is the event's
 *   data as published.
 * - `paused`: the turn waits (`waiting_approval`, `waiting_clarification`) and
 *   the follow ends there (`endOnPause`). `message` is the waiting Message as
 *   the wire carries it (null only when an event carried none).
 * - `ended`: the turn is over and the follow ends. `error` is set for a
 *   failed turn (the one `OutcomeError` mapping, with `details.event_id`),
 *   `message` otherwise. `terminationReason` is known only from the ledger.
 * - `timeout`: the follow's own bound passed; the turn goes on.
 */
export type TurnStep =
  | { kind: 'delta'; seq: number; content: string }
  | { kind: 'tool_call'; seq: number; id: string; name: string; arguments: string }
  | { kind: 'tool_result'; seq: number; id: string; name: string; result: unknown }
  | { kind: 'status'; seq: number; status: string; data: Record<string, unknown> }
  | { kind: 'paused'; seq: number | null; status: string; message: object | null }
  | {
      kind: 'ended';
      seq: number | null;
      status: string;
      message: object | null;
      error: StepError | null;
      terminationReason: string | null;
    }
  | { kind: 'timeout' };

/** The error object of a failed turn as the wire carries it (the API envelope's `error`). */
export interface StepError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

export { isPausedStatus } from './turn-status.js';

/**
 * True for a turn event that settles the turn for whoever waits on it: its
 * final event (`done`, `error`) or the announcement of a pause.
 */
export function isOutcomeEvent(event: Pick<TurnEvent, 'type' | 'data'>): boolean {
  if (event.type === 'done' || event.type === 'error') return true;
  return event.type === 'status' && PAUSED_STATUSES.has(String(event.data.status));
}

/** The step a raw follow step stands for (null: nothing to show). */
export function readyStep(step: FollowStep, endOnPause: boolean): TurnStep {
  switch (step.kind) {
    case 'timeout':
      return { kind: 'timeout' };
    case 'end':
      return ledgerStep(step.turn);
    case 'event':
      return eventStep(step.event, step.live && endOnPause);
  }
}

/** The end (or pause) the ledger shows, when no final event told it. */
function ledgerStep(turn: TurnRecord): TurnStep {
  if (PAUSED_STATUSES.has(turn.status)) {
    return { kind: 'paused', seq: null, status: turn.status, message: turnOutcomeMessage(turn) };
  }
  const error = outcomeError(turn);
  return {
    kind: 'ended',
    seq: null,
    status: turn.status,
    message: error ? null : turnOutcomeMessage(turn),
    error: error ? { ...error, details: { event_id: turn.eventId } } : null,
    terminationReason: turn.terminationReason,
  };
}

/** One turn event as a step; `pauseEnds`: a pause announced live ends the follow. */
function eventStep(event: TurnEvent, pauseEnds: boolean): TurnStep {
  const { seq, data } = event;
  switch (event.type) {
    case 'delta':
      return { kind: 'delta', seq, content: typeof data.content === 'string' ? data.content : '' };
    case 'tool_call':
      return {
        kind: 'tool_call',
        seq,
        id: String(data.id),
        name: String(data.name),
        arguments: String(data.arguments),
      };
    case 'tool_result':
      return { kind: 'tool_result', seq, id: String(data.id), name: String(data.name), result: data.result };
    case 'status': {
      const status = String(data.status);
      if (pauseEnds && PAUSED_STATUSES.has(status)) {
        return { kind: 'paused', seq, status, message: (data.message as object | undefined) ?? null };
      }
      return { kind: 'status', seq, status, data };
    }
    case 'done': {
      const status = String(data.status);
      const message = (data.message as object | undefined) ?? null;
      if (PAUSED_STATUSES.has(status)) return { kind: 'paused', seq, status, message };
      return { kind: 'ended', seq, status, message, error: null, terminationReason: null };
    }
    case 'error':
      return {
        kind: 'ended',
        seq,
        status: typeof data.status === 'string' ? data.status : 'failed',
        message: null,
        error: errorOf(data),
        terminationReason: null,
      };
  }
}

/** The error object an `error` event carries (its data itself when it has none). */
function errorOf(data: Record<string, unknown>): StepError {
  const error = (data.error ?? data) as { code?: unknown; message?: unknown; details?: unknown };
  const details = error.details;
  return {
    code: typeof error.code === 'string' ? error.code : 'INTERNAL_ERROR',
    message: typeof error.message === 'string' ? error.message : 'the turn failed',
    ...(details && typeof details === 'object' && !Array.isArray(details)
      ? { details: details as Record<string, unknown> }
      : {}),
  };
}

/** Maps a raw follow to ready steps (see TurnStep). */
export async function* readySteps(raw: AsyncIterable<FollowStep>, endOnPause: boolean): AsyncGenerator<TurnStep> {
  for await (const step of raw) yield readyStep(step, endOnPause);
}
