import type { PendingState, TurnTotals } from '../runtime/index.js';
import { isPausedStatus } from './turn-status.js';
import type { TurnRecord } from './turns.repo.js';

/** The Message shape (DECISIONS §5) that answers a turn. */
export interface MessageView {
  id: string;
  role: 'assistant';
  content: string;
  tool_calls: Array<{ id: string; name: string; arguments: string; result?: unknown }>;
  cost: { input_tokens: number; output_tokens: number; total_usd: number };
  status: string;
  event_id: string;
}

/** Builds the Message of a turn from its totals. */
export function messageView(
  eventId: string,
  status: string,
  content: string | null,
  messageId: string | null,
  totals: TurnTotals,
): MessageView {
  return {
    // A turn that ends or pauses without a stored reply still answers a Message with a string id
    // (derived from its event, so every replay shows the same one) and string content.
    id: messageId ?? `msg_${eventId.replace(/^evt_/, '')}`,
    role: 'assistant',
    content: content ?? '',
    tool_calls: totals.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments, result: c.result })),
    cost: {
      input_tokens: totals.inputTokens,
      output_tokens: totals.outputTokens,
      total_usd: totals.costNanoUsd / 1e9,
    },
    status,
    event_id: eventId,
  };
}

/** The wire shape of a turn record (DECISIONS §5). */
export function presentTurn(turn: TurnRecord): Record<string, unknown> {
  return {
    event_id: turn.eventId,
    session_key: turn.sessionKey,
    status: turn.status,
    current_tool: turn.currentTool,
    pending_tool_call: pendingToolCall(turn),
    response: turn.response,
    termination_reason: turn.terminationReason,
    context_epoch: turn.contextEpoch,
    accepted_at: turn.acceptedAt,
    started_at: turn.startedAt,
    finished_at: turn.finishedAt,
    updated_at: turn.updatedAt,
    trace_id: traceIdOf(turn.payload),
    source: sourceOf(turn.payload),
  };
}

/** The call a paused turn waits on (`pending.calls[0]`, DECISIONS §5), else null. */
function pendingToolCall(turn: TurnRecord): { id: string; name: string; arguments: string } | null {
  if (!isPausedStatus(turn.status)) return null;
  const call = (turn.pending as Partial<PendingState> | null)?.calls?.[0];
  return call ? { id: call.id, name: call.name, arguments: call.arguments } : null;
}

/** Where a turn's message came in (its inbound event's `source`: `api`, `openai`, `responses`…), else null. */
function sourceOf(payload: unknown): string | null {
  const source = (payload as { source?: unknown } | null)?.source;
  return typeof source === 'string' ? source : null;
}

/** The trace id stored with a turn accepted while tracing was on (DECISIONS §21), else null. */
function traceIdOf(payload: unknown): string | null {
  const traceId = (payload as { trace?: { trace_id?: unknown } } | null)?.trace?.trace_id;
  return typeof traceId === 'string' ? traceId : null;
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
