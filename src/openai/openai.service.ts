import { errors } from '../http/errors.js';
import type { Principal } from '../http/route.js';
import { resolveKey, type Headers } from '../idempotency/index.js';
import type { IdGenerator } from '../lib/ids.js';
import {
  MAX_CONTEXT_MESSAGES,
  endedTurn,
  isInterruptedStatus,
  outcomeApiError,
  pauseOf,
  sessionKeyFor,
  turnOutcomeMessage,
  unnamedChatId,
  type ContextMessage,
  type Inbound,
  type TurnRecord,
} from '../turns/index.js';
import type { CompletionUsage, FinishReason } from './openai.presenter.js';
import { chatIdSchema, contentText, type CompletionRequest } from './openai.schema.js';

/** The platform and channel of the OpenAI-compatible API's sessions (`gateway:openai:<chat id>`). */
export const OPENAI_PLATFORM = 'openai';

/** The request header naming the conversation (its value is the chat id, DECISIONS §13). */
export const SESSION_HEADER = 'x-session-key';

/** Where a call's conversation lives. */
export interface SessionChoice {
  /** The chat id: `X-Session-Key`, else `user`, else a fresh `~…` id. */
  chatId: string;
  /** False for a fresh session: the request's earlier messages are its context. */
  named: boolean;
}

function singleHeader(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  if (!Array.isArray(value)) return value;
  if (new Set(value).size > 1) throw errors.badRequest(`conflicting ${name} headers`);
  return value[0];
}

/**
 * The session of a call (DECISIONS §13, ADR 0015): `X-Session-Key`, else the
 * body's `user`, names it; without either it is fresh — `~` plus a new id,
 * or, for a keyed call, a hash of the principal and the key, so a retry
 * lands in the same session and therefore the same idempotency scope.
 */
export function chooseSession(
  body: Pick<CompletionRequest, 'user'>,
  headers: Headers,
  principal: Principal,
  ids: IdGenerator,
): SessionChoice {
  const header = singleHeader(headers, SESSION_HEADER);
  if (header !== undefined) {
    const parsed = chatIdSchema.safeParse(header);
    if (!parsed.success) {
      throw errors.validation([{ path: 'headers.x-session-key', message: parsed.error.issues[0]!.message }]);
    }
    return { chatId: parsed.data, named: true };
  }
  if (body.user !== undefined) return { chatId: body.user, named: true };
  return { chatId: unnamedChatId(principal, resolveKey({ headers }), ids), named: false };
}

/**
 * Reads a validated request into the message path's `Inbound`: the last
 * message (which must be the user's) is the turn's text; for a fresh session
 * the messages before it are its context, at most the newest
 * `MAX_CONTEXT_MESSAGES` (the window the session history gets too).
 * `developer` messages are system messages.
 */
export function inboundOf(
  body: CompletionRequest,
  session: SessionChoice,
  caller: { principal: Principal; headers: Headers },
): Inbound {
  const last = body.messages[body.messages.length - 1]!;
  if (last.role !== 'user') {
    throw errors.validation([{ path: 'body.messages', message: 'the last message must have role user' }]);
  }
  const text = contentText(last.content);
  if (text.trim() === '') {
    throw errors.validation([{ path: 'body.messages', message: 'the last user message must not be empty' }]);
  }
  let context: ContextMessage[] | undefined;
  if (!session.named) {
    context = body.messages
      .slice(0, -1)
      .map((m): ContextMessage => ({
        role: m.role === 'developer' ? 'system' : m.role,
        content: contentText(m.content),
      }))
      .filter((m) => m.content !== '')
      .slice(-MAX_CONTEXT_MESSAGES);
  }
  return {
    sessionKey: sessionKeyFor(OPENAI_PLATFORM, session.chatId, caller.principal),
    text,
    platform: OPENAI_PLATFORM,
    userId: body.user ?? session.chatId,
    chatId: session.chatId,
    channel: OPENAI_PLATFORM,
    source: 'openai',
    principal: caller.principal,
    // A conversation under a token, as POST /sessions/{id}/messages: no platform user speaks (ADR 0015).
    identity: 'skip',
    idempotency: { scope: 'principal', headers: caller.headers },
    trace: caller.headers, // traceparent, tracestate (DECISIONS §21)
    wait: true,
    ...(context?.length ? { context } : {}),
  };
}

/** What a turn answers an OpenAI client with. */
export interface CompletionAnswer {
  content: string;
  finishReason: FinishReason;
  usage: CompletionUsage;
  /** True when `content` is the gateway's own note (a pause, an interruption) rather than the model's reply. */
  notice: boolean;
}

/** Unix seconds of a turn's acceptance: the completion's `created`, the same on every replay. */
export function createdOf(turn: Pick<TurnRecord, 'acceptedAt'>): number {
  return Math.floor(Date.parse(turn.acceptedAt) / 1000);
}

/**
 * The answer of a turn that reached an outcome (ADR 0015): `completed` → its
 * reply, `stop`; `incomplete` → the partial reply or a note, `length`; a
 * pause or an interruption → a note naming what is awaited and the event id,
 * `stop`. A failed turn throws its API error (502 upstream, 500 otherwise).
 */
export function answerOf(turn: TurnRecord): CompletionAnswer {
  const failure = outcomeApiError(turn, { event_id: turn.eventId });
  if (failure) throw failure;
  const message = turnOutcomeMessage(turn);
  const usage: CompletionUsage = {
    prompt_tokens: message.cost.input_tokens,
    completion_tokens: message.cost.output_tokens,
    total_tokens: message.cost.input_tokens + message.cost.output_tokens,
  };
  const reply = turn.response ?? message.content;
  const id = turn.eventId;
  const note = (content: string, finishReason: FinishReason = 'stop'): CompletionAnswer => ({
    content,
    finishReason,
    usage,
    notice: true,
  });
  const ended = endedTurn(turn);
  const pause = pauseOf(turn.status);
  if (ended?.completed) return { content: reply, finishReason: 'stop', usage, notice: false };
  if (ended && isInterruptedStatus(turn.status)) {
    return note(`The turn was interrupted (${ended.reason}) before it answered; event ${id}.`);
  }
  if (ended) {
    // Incomplete (a failed turn was answered by its error above): what the agent got to, cut short.
    if (reply) return { content: reply, finishReason: 'length', usage, notice: false };
    return note(`The agent stopped before it answered (${ended.reason}); event ${id}.`, 'length');
  }
  if (pause === 'approval') {
    return note(
      `Waiting for an administrator to approve the tool call${turn.currentTool ? ` "${turn.currentTool}"` : ''} ` +
        `(event ${id}). Once it is approved or denied the reply appears in this conversation's history.`,
    );
  }
  if (pause === 'clarification') {
    return note(`${reply || 'Could you clarify?'}\n\n(Waiting for your answer in this conversation; event ${id}.)`);
  }
  return note(`The turn is ${turn.status}; event ${id}.`); // not an outcome: waiting returns only outcomes
}
