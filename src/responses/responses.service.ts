import { errors } from '../http/errors.js';
import type { Principal } from '../http/route.js';
import { resolveKey, type Headers } from '../idempotency/index.js';
import type { IdGenerator } from '../lib/ids.js';
import { ownerScope } from '../sessions/index.js';
import {
  MAX_CONTEXT_MESSAGES,
  sessionKeyFor,
  unnamedChatId,
  type ContextMessage,
  type Inbound,
  type MessagePath,
  type TurnRecord,
} from '../turns/index.js';
import { eventIdOf } from './responses.presenter.js';
import { messageText, type ResponseRequest } from './responses.schema.js';

/** The platform, channel and source of the Responses API's turns (`gateway:responses:<chat id>`). */
export const RESPONSES_PLATFORM = 'responses';

/** What reading a response needs: the ledger, and whose session a turn is in. */
export interface ResponseLookup {
  messages: Pick<MessagePath, 'turn'>;
  sessions: { require(key: string, scope: string | null): Promise<unknown> };
}

/**
 * The turn of a response id, when it is the caller's (DECISIONS §18): an id
 * that is not `resp_…`, an unknown turn and another principal's are all 404,
 * so existence does not leak.
 */
export async function requireResponse(lookup: ResponseLookup, id: string, principal: Principal): Promise<TurnRecord> {
  const missing = errors.notFound('response');
  const eventId = eventIdOf(id);
  if (eventId === null) throw missing;
  const turn = await lookup.messages.turn(eventId);
  if (!turn) throw missing;
  try {
    await lookup.sessions.require(turn.sessionKey, ownerScope(principal));
  } catch {
    throw missing;
  }
  return turn;
}

/** Where a turn of this request goes: a new conversation, or the one of `previous_response_id`. */
export interface Conversation {
  sessionKey: string;
  chatId: string;
  /** False for a new conversation: the request's earlier input items are its context. */
  continued: boolean;
}

/** The conversation a previous response's turn belongs to (its session; its chat id from the ledger's payload). */
export function conversationOf(previous: TurnRecord): Conversation {
  const payload = previous.payload as { chat_id?: unknown } | null;
  const chatId = typeof payload?.chat_id === 'string' ? payload.chat_id : previous.sessionKey;
  return { sessionKey: previous.sessionKey, chatId, continued: true };
}

/**
 * A new conversation: `~` plus a new id, or for a keyed request a hash of the
 * principal and the key, so a retry lands in the same session and therefore
 * the same idempotency scope (as the chat completions do, ADR 0015).
 */
export function newConversation(principal: Principal, headers: Headers, ids: IdGenerator): Conversation {
  const chatId = unnamedChatId(principal, resolveKey({ headers }), ids);
  return { sessionKey: sessionKeyFor(RESPONSES_PLATFORM, chatId, principal), chatId, continued: false };
}

/**
 * Reads a validated request into the message path's `Inbound`: the last
 * input message (which must be the user's) is the turn's text; for a new
 * conversation the items before it are its context; `instructions` goes
 * first as a system message, for this turn only. `developer` is `system`.
 */
export function inboundOf(
  body: ResponseRequest,
  conversation: Conversation,
  caller: { principal: Principal; headers: Headers; background: boolean },
): Inbound {
  const items = typeof body.input === 'string' ? [{ role: 'user' as const, content: body.input }] : body.input;
  const last = items[items.length - 1]!;
  if (last.role !== 'user') {
    throw errors.validation([{ path: 'body.input', message: 'the last input item must be a user message' }]);
  }
  const text = messageText(last);
  if (text.trim() === '') {
    throw errors.validation([{ path: 'body.input', message: 'the last user message must not be empty' }]);
  }
  const earlier: ContextMessage[] = conversation.continued
    ? []
    : items.slice(0, -1).map((m) => ({ role: m.role === 'developer' ? 'system' : m.role, content: messageText(m) }));
  const instructions: ContextMessage[] = body.instructions ? [{ role: 'system', content: body.instructions }] : [];
  const kept = earlier.filter((m) => m.content !== '').slice(-(MAX_CONTEXT_MESSAGES - instructions.length));
  const context = [...instructions, ...kept];
  return {
    sessionKey: conversation.sessionKey,
    text,
    platform: RESPONSES_PLATFORM,
    userId: conversation.chatId,
    chatId: conversation.chatId,
    channel: RESPONSES_PLATFORM,
    source: RESPONSES_PLATFORM,
    principal: caller.principal,
    // A conversation under a token: no platform user speaks (as the chat completions, ADR 0015).
    identity: 'skip',
    idempotency: { scope: 'principal', headers: caller.headers },
    trace: caller.headers, // traceparent, tracestate (DECISIONS §21)
    wait: !caller.background,
    ...(context.length ? { context } : {}),
  };
}
