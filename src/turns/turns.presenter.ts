import type { TurnTotals } from '../runtime/index.js';
import { messageView, type MessageView } from './turn-runner.js';
import type { TurnRecord } from './turns.repo.js';

/** The wire shape of a turn record (DECISIONS §5). */
export function presentTurn(turn: TurnRecord): Record<string, unknown> {
  return {
    event_id: turn.eventId,
    session_key: turn.sessionKey,
    status: turn.status,
    current_tool: turn.currentTool,
    response: turn.response,
    termination_reason: turn.terminationReason,
    context_epoch: turn.contextEpoch,
    accepted_at: turn.acceptedAt,
    started_at: turn.startedAt,
    finished_at: turn.finishedAt,
    updated_at: turn.updatedAt,
  };
}

/** The Message of a turn that reached an outcome (stored result, or rebuilt for paused turns). */
export function turnOutcomeMessage(turn: TurnRecord): MessageView {
  const stored = turn.result as { message?: MessageView } | null;
  if (stored?.message) return stored.message;
  const pending = turn.pending as { totals?: TurnTotals } | null;
  const totals = pending?.totals ?? { inputTokens: 0, outputTokens: 0, costNanoUsd: 0, toolCalls: [], iterations: 0 };
  return messageView(turn.eventId, turn.status, turn.response, null, totals);
}

/** The error stored with a failed turn, if any. */
export function turnError(turn: TurnRecord): { code: string; message: string } | null {
  const stored = turn.result as { error?: { code: string; message: string } } | null;
  return stored?.error ?? null;
}
