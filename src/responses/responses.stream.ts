import { errorResponse } from '../http/errors.js';
import type { RequestContext } from '../http/route.js';
import { openSse } from '../http/sse.js';
import { openAiErrorBody } from '../openai/index.js';
import type { FollowOptions, TurnRecord, TurnStep } from '../turns/index.js';
import {
  functionCallItem,
  functionCallOutputItem,
  messageItem,
  outputTextPart,
  presentResponse,
  statusOf,
  type ResponseEcho,
} from './responses.presenter.js';

/** What streaming a response needs from the message path. */
export interface ResponseStreamDeps {
  follow(eventId: string, options: FollowOptions): AsyncIterable<TurnStep>;
  /** The ledger record (the outcome is stored before its final event is published). */
  turn(eventId: string): Promise<TurnRecord | null>;
}

/** The assistant message being streamed. */
interface OpenMessage {
  id: string;
  index: number;
  text: string;
}

/** The terminal event of each final status. */
const TERMINAL_EVENTS: Record<string, string> = {
  completed: 'response.completed',
  incomplete: 'response.incomplete',
  failed: 'response.failed',
  cancelled: 'response.incomplete',
};

/**
 * Streams a turn as the Responses API streams a response (DECISIONS §22,
 * ADR 0041): `response.created`, `response.in_progress`, then the output
 * items as the turn makes them — an assistant message (`output_item.added`,
 * `content_part.added`, `output_text.delta`…, `output_text.done`,
 * `content_part.done`, `output_item.done`) and each tool call and result as a
 * `function_call` and `function_call_output` item — and last
 * `response.completed`, `response.incomplete` or `response.failed` with the
 * whole response read from the ledger. Every event has a `sequence_number`.
 * A client that goes away stops the following, never the turn.
 */
export async function streamResponse(
  ctx: RequestContext,
  deps: ResponseStreamDeps,
  accepted: TurnRecord,
  options: { echo: ResponseEcho; timeoutMs: number },
): Promise<void> {
  const stream = openSse(ctx);
  const eventId = accepted.eventId;
  let sequence = 0;
  /** Whether a write left the socket full: the next step of the turn waits until the client has taken it. */
  let full = false;
  const send = (type: string, data: Record<string, unknown>): void => {
    if (!stream.send(type, { type, sequence_number: sequence++, ...data })) full = true;
  };
  const snapshot = (turn: TurnRecord) => presentResponse(turn, options.echo);

  let outputIndex = 0;
  let open: OpenMessage | null = null;
  const openMessage = () => {
    const message = { id: `msg_${eventId}_${outputIndex}`, index: outputIndex++, text: '' };
    send('response.output_item.added', {
      output_index: message.index,
      item: messageItem(message.id, '', 'in_progress'),
    });
    const part = { item_id: message.id, output_index: message.index, content_index: 0 };
    send('response.content_part.added', { ...part, part: outputTextPart('') });
    return message;
  };
  const closeMessage = (status: 'completed' | 'incomplete') => {
    if (!open) return;
    const part = { item_id: open.id, output_index: open.index, content_index: 0 };
    send('response.output_text.done', { ...part, text: open.text, logprobs: [] });
    send('response.content_part.done', { ...part, part: outputTextPart(open.text) });
    send('response.output_item.done', { output_index: open.index, item: messageItem(open.id, open.text, status) });
    open = null;
  };
  const addText = (text: string) => {
    open ??= openMessage();
    open.text += text;
    send('response.output_text.delta', {
      item_id: open.id,
      output_index: open.index,
      content_index: 0,
      delta: text,
      logprobs: [],
    });
  };
  const addItem = (item: Record<string, unknown>) => {
    closeMessage('completed');
    const index = outputIndex++;
    send('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress' } });
    send('response.output_item.done', { output_index: index, item });
  };

  const first = snapshot(accepted);
  send('response.created', { response: { ...first, status: 'queued', output: [], usage: null } });
  send('response.in_progress', { response: { ...first, status: 'in_progress', output: [], usage: null } });
  let outcome: TurnRecord | null = null;
  try {
    for await (const step of deps.follow(eventId, {
      fromSeq: 0,
      endOnPause: true,
      timeoutMs: options.timeoutMs,
      signal: stream.signal,
      onHeld: (bytes) => stream.holding(bytes),
    })) {
      if (full) {
        // A client behind waits for the rest; what the turn says meanwhile is held and counted (ADR 0043).
        await stream.drained();
        full = false;
      }
      if (step.kind === 'timeout') break; // the turn goes on: the response ends as it stands
      if (step.kind === 'delta' && step.content !== '') addText(step.content);
      else if (step.kind === 'tool_call') addItem(functionCallItem(step));
      else if (step.kind === 'tool_result') addItem(functionCallOutputItem(step));
      else if (step.kind === 'paused' || step.kind === 'ended') break;
    }
    if (stream.signal.aborted) return; // the client went away; the turn goes on
    outcome = await deps.turn(eventId);
    if (!outcome) throw new Error(`turn ${eventId} vanished from the ledger`);
    const view = statusOf(outcome);
    const final = snapshot(outcome);
    if (view.status === 'queued' || view.status === 'in_progress') {
      // The follow's bound passed: the last word is the state so far; GET /v1/responses/{id} polls on.
      closeMessage('incomplete');
      send('response.incomplete', {
        response: { ...final, status: 'incomplete', incomplete_details: { reason: 'timeout' } },
      });
    } else {
      const streamed = (open as OpenMessage | null)?.text ?? null; // set by the closures above
      const note = view.note ?? (streamed === null && view.status !== 'failed' ? outcome.response || '' : '');
      if (note !== '') addText((streamed ? '\n\n' : '') + note);
      closeMessage(view.status === 'completed' ? 'completed' : 'incomplete');
      send(TERMINAL_EVENTS[view.status]!, { response: final });
    }
    stream.close();
  } catch (err) {
    // The store (503) or a lost turn: an `error` event in OpenAI's shape, which the SDKs raise.
    if (stream.signal.aborted) return;
    const body = errorResponse(err, ctx.requestId, ctx.request.log, { body: openAiErrorBody }).body as {
      error: Record<string, unknown>;
    };
    send('error', { code: body.error.code, message: body.error.message, param: null, error: body.error });
    stream.close();
  }
}
