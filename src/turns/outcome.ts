import { ApiError, errors, type ErrorCode } from '../http/errors.js';
import { HttpResult } from '../http/route.js';
import { turnOutcomeMessage } from './turns.presenter.js';
import { isTerminalStatus } from './turn-status.js';
import type { TurnRecord } from './turns.repo.js';

/** The error a failed turn answers with, in every wire format. */
export interface OutcomeError {
  code: Extract<ErrorCode, 'UPSTREAM_ERROR' | 'INTERNAL_ERROR'>;
  message: string;
}

/**
 * The error of a turn that reached an outcome, or null when it did not fail
 * (DECISIONS §3, §5): a model provider failure is 502 `UPSTREAM_ERROR` with
 * its message, anything else 500 `INTERNAL_ERROR` with a generic one. The
 * one mapping every wire format (envelope, webhook, frame, SSE) builds on.
 */
export function outcomeError(turn: TurnRecord): OutcomeError | null {
  if (turn.status !== 'failed') return null;
  const stored = (turn.result as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  if (stored?.code === 'UPSTREAM_ERROR') {
    return {
      code: 'UPSTREAM_ERROR',
      message: typeof stored.message === 'string' ? stored.message : 'model provider failed',
    };
  }
  return { code: 'INTERNAL_ERROR', message: 'internal error' };
}

/** How a turn ended, for work that runs on turns (tasks, cron runs): the one mapping of every ended status. */
export interface EndedTurn {
  /** True only for `completed`; `incomplete`, `interrupted` and `failed` did not complete. */
  completed: boolean;
  /** The reply text (a completed turn's answer; what an incomplete one got to). */
  response: string | null;
  /** A failed turn's error message (`OutcomeError`), else null. */
  failure: string | null;
  /** Why it ended: the termination reason (`completed`, `process_restart`, `budget_exceeded`…), else the status. */
  reason: string;
}

/** How `turn` ended, or null while it has not (accepted, running, or paused for a person). */
export function endedTurn(turn: TurnRecord): EndedTurn | null {
  if (!isTerminalStatus(turn.status)) return null;
  return {
    ...endReason(turn.status, turn.terminationReason),
    response: turn.response,
    failure: outcomeError(turn)?.message ?? null,
  };
}

/** Whether an ended turn completed, and why it ended (`EndedTurn.reason`), from its status and termination reason. */
export function endReason(status: string, terminationReason: string | null): Pick<EndedTurn, 'completed' | 'reason'> {
  return { completed: status === 'completed', reason: terminationReason ?? status };
}

/** The API envelope's error for a failed turn, with `details` (e.g. `{event_id}`); null when it did not fail. */
export function outcomeApiError(turn: TurnRecord, details: Record<string, unknown>): ApiError | null {
  const error = outcomeError(turn);
  return error ? new ApiError(error.code, error.message, details) : null;
}

/** Waits ran out: 504 `TIMEOUT` in the envelope (the turn goes on; a keyed retry gets the late result). */
export function outcomeTimeout(details: Record<string, unknown>, what = 'the turn'): ApiError {
  return errors.timeout(`timed out waiting for ${what}; it goes on — retry with the same key for the result`, details);
}

/** The Message that answers POST /sessions/{id}/messages, or the failed turn's envelope (thrown). */
export function envelopeMessage(turn: TurnRecord): ReturnType<typeof turnOutcomeMessage> {
  const error = outcomeApiError(turn, { event_id: turn.eventId });
  if (error) throw error;
  return turnOutcomeMessage(turn);
}

/** POST /message with wait: 200 `{status, event_id, session_key, response, message}`, or the failed turn's envelope. */
export function envelopeResult(turn: TurnRecord): HttpResult {
  const message = envelopeMessage(turn);
  return new HttpResult(200, {
    status: turn.status,
    event_id: turn.eventId,
    session_key: turn.sessionKey,
    response: turn.response,
    message,
  });
}
