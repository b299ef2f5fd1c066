import { createHash } from 'node:crypto';
import { principalKeyPart } from '../sessions/index.js';
import type { Principal } from '../http/route.js';
import type { KeySources, ScopeKind } from '../idempotency/index.js';
import type { IdGenerator } from '../lib/ids.js';

/** Where a message came in: the ledger's `source`. */
export type InboundSource =
  'api' | 'session' | 'websocket' | 'webhook' | 'platform' | 'task' | 'cron' | 'openai' | 'mcp' | 'responses' | 'a2a';

/**
 * One earlier message a request carries as its own conversation (the
 * OpenAI-compatible API's fresh sessions, ADR 0015): sent to the model before
 * the session's history, never stored as history.
 */
export interface ContextMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** W3C trace context of the request that carried a message: its headers, or a WebSocket frame's field. */
export interface TraceCarrier {
  readonly traceparent?: string | string[] | undefined;
  readonly tracestate?: string | string[] | undefined;
  /** Other headers of the request, unread. */
  readonly [header: string]: string | string[] | undefined;
}

/**
 * A turn's trace as the ledger stores it with the turn (`payload.trace`): its trace id, the id of its
 * `gatehouse.turn` span, the caller's span (the turn span's parent) when the request carried one, the trace
 * flags and state, and when the acceptance began (epoch ms, the turn span's start).
 */
export interface StoredTrace {
  trace_id: string;
  span_id: string;
  parent_span_id?: string;
  flags: number;
  tracestate?: string;
  start_ms: number;
}

/** At most this many context messages on one inbound message. */
export const MAX_CONTEXT_MESSAGES = 100;

/**
 * One message from any entry point, read from its wire format into the
 * shape the message path takes (`MessagePath.submit`).
 */
export interface Inbound {
  /** The session it belongs to (`gateway:<platform>:<chat_id>`, DECISIONS §5). */
  sessionKey: string;
  text: string;
  /** The sender's platform, user and chat: the identity checked by auth mode and the content fingerprinted. */
  platform: string;
  userId: string;
  chatId: string;
  /** The session's channel (analytics, a new session's `channel`). */
  channel: string;
  source: InboundSource;
  /** The token's principal (the idempotency scope of `principal` keys); null for work the gateway creates. */
  principal: Principal | null;
  /** The agent asked for (`agent` on the request, DECISIONS §17): decides a session this message creates. */
  agent?: string;
  /**
   * The user identity check by auth mode (DECISIONS §4): the caller's socket
   * address and whether the loopback exemption applies. `skip` only where
   * no platform user speaks: work the gateway creates itself (tasks, cron)
   * and a session addressed by its key under a token.
   */
  identity: { ip: string; loopbackTrusted: boolean } | 'skip';
  /** Where the request's idempotency key may travel, and the scope it lives in; absent: not keyable. */
  idempotency?: KeySources & { scope: ScopeKind };
  /** Whether the caller waits for the turn's result (a retry of it waits too: spec rules 5–6). */
  wait: boolean;
  /**
   * The entry point writes nothing to its caller before a waited turn's
   * outcome — no acknowledgement, no `accepted` event — so the acceptance
   * need not be durable on its own: it commits, and the turn's claim (durable
   * before any model call) and its outcome make it durable with them (one
   * fsync fewer per waited turn). A wait that times out makes it durable
   * before the timeout is answered. Ignored unless `wait` is set.
   */
  outcomeOnly?: boolean;
  /** A bound on turns in flight for this entry point (the webhook's `max_pending`). */
  admission?: Admission;
  /**
   * The request's own earlier messages (≤ `MAX_CONTEXT_MESSAGES`), stored
   * with the turn and sent to the model before the session's history; part
   * of the idempotency content when present.
   */
  context?: readonly ContextMessage[];
  /** The W3C trace context the request carried (its headers, or a frame's `traceparent`), read when tracing is on. */
  trace?: TraceCarrier;
}

/**
 * A per-entry-point bound on turns in flight. `admit` is asked after the
 * identity check and the key rules, with the event id a keyed request
 * would get (a retry of a turn still in flight may pass a full bound: it
 * adds nothing). It throws the entry point's refusal (e.g. 429) when full.
 */
export interface Admission {
  admit(eventId: string | null): AdmissionSlot;
}

/** A slot taken by `Admission.admit`: held by a new turn until its outcome, or released. */
export interface AdmissionSlot {
  /** A new turn was accepted under this slot. */
  hold(eventId: string): void;
  /** Nothing new was accepted (a replay, or a failure). */
  release(): void;
}

/**
 * What the message path answers a submission with, so rules 5 and 6 are
 * decided once: `answer: 'ack'` — acknowledge (`accepted`, event id);
 * `answer: 'result'` — the caller waits, or retries a waited original (which
 * may still be racing to its end): wait for the turn's outcome and answer
 * with it.
 */
export interface Submitted {
  eventId: string;
  sessionKey: string;
  /** True when a retry was answered from its original (spec rule 3): nothing new was stored or queued. */
  replay: boolean;
  answer: 'ack' | 'result';
}

/** What the ledger stores as a turn's inbound event (`payload`). */
export interface InboundPayload {
  text: string;
  platform: string;
  user_id: string;
  chat_id: string;
  channel: string;
  source: string;
  /** The request's own earlier messages, when it carried them (`Inbound.context`). */
  context?: ContextMessage[];
  /** The turn's trace (DECISIONS §21), when the accepting gateway traces: continued by whichever process runs it. */
  trace?: StoredTrace;
}

/** The ledger's record of an inbound message (`payload`): the wire's snake_case fields. */
export function payloadOf(inbound: Inbound): InboundPayload {
  return {
    text: inbound.text,
    platform: inbound.platform,
    user_id: inbound.userId,
    chat_id: inbound.chatId,
    channel: inbound.channel,
    source: inbound.source,
    ...(inbound.context?.length ? { context: inbound.context.map((m) => ({ role: m.role, content: m.content })) } : {}),
  };
}

/**
 * The session key of a platform conversation (DECISIONS §5); a configured
 * principal's (`principal`) carries its id after the platform, so principals
 * never share a session by chat id (`principalKeyPart`, DECISIONS §18).
 */
export function sessionKeyFor(
  platform: string,
  chatId: string,
  principal: Pick<Principal, 'id'> | null = null,
): string {
  return `gateway:${platform}${principalKeyPart(principal)}:${chatId}`;
}

/**
 * The chat id of a conversation its caller did not name (the OpenAI-compatible API, the MCP server's
 * `send_message`): `~` plus a new id, or, for a keyed request, a hash of the principal's idempotency scope and the
 * (validated) key, so a retry lands in the same session and therefore the same idempotency scope. Named chat ids
 * never start with `~`, so the two never meet.
 */
export function unnamedChatId(principal: Pick<Principal, 'scope'>, key: string | undefined, ids: IdGenerator): string {
  if (key === undefined) return `~${ids.next('chat')}`;
  const digest = createHash('sha256').update(principal.scope).update('\u0000').update(key).digest('hex');
  return `~k${digest.slice(0, 32)}`;
}
