import { errorResponse } from '../http/errors.js';
import type { RequestContext } from '../http/route.js';
import { openSse } from '../http/sse.js';
import { outcomeTimeout, type FollowOptions, type TurnRecord, type TurnStep } from '../turns/index.js';
import { openAiErrorBody, presentChunk, presentUsageChunk } from './openai.presenter.js';
import { answerOf } from './openai.service.js';

/** What streaming a completion needs from the message path. */
export interface CompletionStreamDeps {
  follow(eventId: string, options: FollowOptions): AsyncIterable<TurnStep>;
  /** The ledger record (the outcome is stored before its final event is published). */
  turn(eventId: string): Promise<TurnRecord | null>;
}

/**
 * Streams a turn as OpenAI streams a completion (DECISIONS §13): a first
 * chunk with `delta.role`, the turn's text deltas, a last chunk with
 * `finish_reason`, with `includeUsage` a chunk with no choices and the
 * usage, then `data: [DONE]`. A pause or an interruption adds its note as
 * content; a failed turn ends with `data: {error}` in OpenAI's shape. A
 * client that goes away stops the following, never the turn.
 */
export async function streamCompletion(
  ctx: RequestContext,
  deps: CompletionStreamDeps,
  eventId: string,
  options: { created: number; includeUsage: boolean; timeoutMs: number },
): Promise<void> {
  const stream = openSse(ctx);
  const send = (payload: unknown): boolean => stream.data(JSON.stringify(payload));
  const { created } = options;
  send(presentChunk(eventId, created, { role: 'assistant', content: '' }));
  let streamed = '';
  let outcome: TurnRecord | null = null;
  try {
    for await (const step of deps.follow(eventId, {
      fromSeq: 0,
      endOnPause: true,
      timeoutMs: options.timeoutMs,
      signal: stream.signal,
      onHeld: (bytes) => stream.holding(bytes),
    })) {
      if (step.kind === 'timeout') throw outcomeTimeout({ event_id: eventId });
      if (step.kind === 'delta' && step.content !== '') {
        streamed += step.content;
        // A client behind waits for the rest; what the turn says meanwhile is held and counted (ADR 0043).
        if (!send(presentChunk(eventId, created, { content: step.content }))) await stream.drained();
      } else if (step.kind === 'paused' || step.kind === 'ended') {
        // The answer is built from the ledger's record (stored before the final event was published).
        outcome = await deps.turn(eventId);
        break;
      }
    }
    if (stream.signal.aborted) return; // the client went away; the turn goes on
    if (!outcome) outcome = await deps.turn(eventId);
    if (!outcome) throw new Error(`turn ${eventId} vanished from the ledger`);
    const answer = answerOf(outcome);
    if (answer.notice) {
      send(presentChunk(eventId, created, { content: (streamed ? '\n\n' : '') + answer.content }));
    } else if (streamed === '' && answer.content !== '') {
      send(presentChunk(eventId, created, { content: answer.content }));
    }
    send(presentChunk(eventId, created, {}, answer.finishReason));
    if (options.includeUsage) send(presentUsageChunk(eventId, created, answer.usage));
    stream.data('[DONE]');
    stream.close();
  } catch (err) {
    // A failed turn (502/500), the wait's end (504) or the store (503): OpenAI's error object in the
    // stream, which the SDKs raise; logged as the error handler logs it.
    if (stream.signal.aborted) return;
    send(errorResponse(err, ctx.requestId, ctx.request.log, { body: openAiErrorBody }).body);
    stream.close();
  }
}
