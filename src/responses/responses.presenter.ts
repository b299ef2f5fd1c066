import {
  endedTurn,
  isInterruptedStatus,
  isRunningStatus,
  outcomeError,
  pauseOf,
  turnOutcomeMessage,
  type TurnRecord,
} from '../turns/index.js';
import { RESPONSE_ID_PREFIX } from './responses.schema.js';

/**
 * The Responses API's wire shapes (DECISIONS §22, ADR 0041): a turn of the
 * ledger read as a `response` object with its `output` items.
 */

/** The termination reason a cancel gives its turn; such an interrupted turn is `cancelled`. */
export const CANCEL_REASON = 'cancelled';

/** A response's status, as OpenAI names them. */
export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';

/** The response id of a turn: `resp_<event id>`, the same on every replay. */
export function responseIdOf(eventId: string): string {
  return `${RESPONSE_ID_PREFIX}${eventId}`;
}

/** The event id a response id names, or null when it is not one. */
export function eventIdOf(responseId: string): string | null {
  if (!responseId.startsWith(RESPONSE_ID_PREFIX)) return null;
  const eventId = responseId.slice(RESPONSE_ID_PREFIX.length);
  return eventId === '' ? null : eventId;
}

/** What the request adds to the object (the ledger does not keep it); GET shows the defaults. */
export interface ResponseEcho {
  model: string;
  instructions: string | null;
  previousResponseId: string | null;
  background: boolean | null;
}

/** The echo of a response read back from the ledger. */
export const LEDGER_ECHO: ResponseEcho = {
  model: 'gatehouse',
  instructions: null,
  previousResponseId: null,
  background: null,
};

/** How a turn's status reads as a response (ADR 0041). */
export interface StatusView {
  status: ResponseStatus;
  incompleteReason: string | null;
  error: { code: string; message: string } | null;
  /** The text to show when the turn left no reply of its own (a pause). */
  note: string | null;
}

/**
 * The ledger's status as a response's: accepted → `queued`, running →
 * `in_progress`, completed → `completed`, incomplete → `incomplete` (reason:
 * the termination reason), failed → `failed` with `error`, interrupted by a
 * cancel → `cancelled`, interrupted otherwise (a restart, a shutdown) →
 * `incomplete`; a pause → `incomplete` with reason `waiting_approval` /
 * `waiting_clarification` and a note (the turn goes on once answered; GET
 * then shows its end).
 */
export function statusOf(turn: TurnRecord): StatusView {
  const plain = { incompleteReason: null, error: null, note: null };
  const ended = endedTurn(turn);
  if (ended?.completed) return { ...plain, status: 'completed' };
  const failure = outcomeError(turn); // null unless the turn failed
  if (failure) return { ...plain, status: 'failed', error: { code: 'server_error', message: failure.message } };
  if (ended && isInterruptedStatus(turn.status) && turn.terminationReason === CANCEL_REASON) {
    return { ...plain, status: 'cancelled' };
  }
  if (ended) return { ...plain, status: 'incomplete', incompleteReason: incompleteReasonOf(ended.reason) };
  const pause = pauseOf(turn.status);
  if (pause === 'approval') {
    const tool = turn.currentTool ? ` "${turn.currentTool}"` : '';
    return {
      ...plain,
      status: 'incomplete',
      incompleteReason: turn.status,
      note: `Waiting for an administrator to approve the tool call${tool}; the reply follows in this conversation.`,
    };
  }
  if (pause === 'clarification') {
    return {
      ...plain,
      status: 'incomplete',
      incompleteReason: turn.status,
      note: turn.response || 'Could you clarify?',
    };
  }
  return { ...plain, status: isRunningStatus(turn.status) ? 'in_progress' : 'queued' };
}

/** OpenAI's name for running out of output, else the ledger's own reason. */
function incompleteReasonOf(reason: string): string {
  return reason === 'length' || reason === 'max_tokens' ? 'max_output_tokens' : reason;
}

/** The usage object of a turn's tokens. */
export function usageOf(cost: { input_tokens: number; output_tokens: number }): Record<string, unknown> {
  return {
    input_tokens: cost.input_tokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: cost.output_tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: cost.input_tokens + cost.output_tokens,
  };
}

/** A tool's result as the text of a `function_call_output`. */
function outputText(result: unknown): string {
  if (result === undefined || result === null) return '';
  return typeof result === 'string' ? result : JSON.stringify(result);
}

/** An assistant `message` item with one `output_text` part. */
export function messageItem(id: string, text: string, status: 'in_progress' | 'completed' | 'incomplete') {
  return {
    type: 'message',
    id,
    status,
    role: 'assistant',
    content: text === '' && status === 'in_progress' ? [] : [outputTextPart(text)],
  };
}

/** An `output_text` content part. */
export function outputTextPart(text: string) {
  return { type: 'output_text', text, annotations: [], logprobs: [] };
}

/** The agent's tool call as a `function_call` item (run by the gateway, not the client: ADR 0041). */
export function functionCallItem(call: { id: string; name: string; arguments: string }) {
  return {
    type: 'function_call',
    id: `fc_${call.id}`,
    call_id: call.id,
    name: call.name,
    arguments: call.arguments,
    status: 'completed',
  };
}

/** The tool's result as a `function_call_output` item. */
export function functionCallOutputItem(call: { id: string; result?: unknown }) {
  return {
    type: 'function_call_output',
    id: `fco_${call.id}`,
    call_id: call.id,
    output: outputText(call.result),
    status: 'completed',
  };
}

/**
 * The `response` object of a turn: its tool calls and their results, then
 * the assistant's message (the reply, what an incomplete turn got to, or a
 * pause's note); `usage` from the turn's tokens. A turn still queued or
 * running has no output yet.
 */
export function presentResponse(turn: TurnRecord, echo: ResponseEcho = LEDGER_ECHO): Record<string, unknown> {
  const view = statusOf(turn);
  const message = turnOutcomeMessage(turn);
  const done = view.status !== 'queued' && view.status !== 'in_progress';
  const output: unknown[] = [];
  if (done) {
    for (const call of message.tool_calls) output.push(functionCallItem(call), functionCallOutputItem(call));
    const text = view.note ?? (turn.response || message.content);
    if (text !== '' && view.status !== 'failed') {
      output.push(messageItem(message.id, text, view.status === 'completed' ? 'completed' : 'incomplete'));
    }
  }
  const finishedAt = turn.finishedAt ? Math.floor(Date.parse(turn.finishedAt) / 1000) : null;
  return {
    id: responseIdOf(turn.eventId),
    object: 'response',
    created_at: Math.floor(Date.parse(turn.acceptedAt) / 1000),
    status: view.status,
    completed_at: view.status === 'completed' ? finishedAt : null,
    background: echo.background,
    error: view.error,
    incomplete_details: view.incompleteReason === null ? null : { reason: view.incompleteReason },
    instructions: echo.instructions,
    max_output_tokens: null,
    model: echo.model,
    output,
    parallel_tool_calls: false,
    previous_response_id: echo.previousResponseId,
    store: true,
    temperature: null,
    text: { format: { type: 'text' } },
    tool_choice: 'auto',
    tools: [],
    top_p: null,
    truncation: 'disabled',
    usage: done ? usageOf(message.cost) : null,
    metadata: {},
  };
}
