import { z } from 'zod';
import { TOPICS, type Topic } from '../../events/index.js';
import { classifyError, ERROR_STATUS, type ErrorCode } from '../../http/errors.js';
import { parseJsonBounded } from '../../lib/json.js';
import { type TurnEvent, readyStep, type TurnStep } from '../../turns/index.js';

/**
 * The WebSocket wire protocol (DECISIONS §8): JSON text frames `{type, …}`.
 * Inbound frames are validated here; outbound frames are typed here; the
 * mapping from turn events to frames is a pure function, so the connection
 * only decides *when* to send.
 */

/** Close codes the gateway uses besides the standard ones. */
export const CLOSE_CODES = {
  /** Server going away: channel disabled or gateway shutting down. */
  GOING_AWAY: 1001,
  /** The server failed unexpectedly. */
  INTERNAL_ERROR: 1011,
  /** The client does not read fast enough (outbound buffer over its cap). */
  TRY_AGAIN_LATER: 1013,
  /** Invalid identity fields in the handshake or auth frame. */
  BAD_REQUEST: 4400,
  /** Bad or missing token, or no auth within the deadline. */
  UNAUTHORIZED: 4401,
  /** The user identity is not authorised by the auth mode. */
  FORBIDDEN: 4403,
} as const;

const ref = z.union([z.string().max(200), z.number().finite()]);
const identityField = (max: number) => z.string().min(1, 'must not be empty').max(max);

/** Optional chat identity, from the auth frame or the query string (DECISIONS §8). */
export const identityFields = z.object({
  platform: identityField(100).optional(),
  user_id: identityField(200).optional(),
  chat_id: identityField(200).optional(),
});

/** `{type: "auth", token, platform?, user_id?, chat_id?}`. */
export const authFrame = identityFields.extend({
  type: z.literal('auth'),
  token: z.string().optional(),
  ref: ref.optional(),
});

/** `{type: "message", text, session_key?, idempotency_key?, agent?, traceparent?, after_seq?, ref?}`. */
export const messageFrame = z.object({
  type: z.literal('message'),
  text: z.string({ error: 'text is required' }).min(1, 'text must not be empty'),
  session_key: z.string().max(500).optional(),
  idempotency_key: z.string({ error: 'idempotency_key must be a string' }).optional(),
  /** The agent a session this message creates gets (DECISIONS §17). */
  agent: z.string().min(1).max(64).optional(),
  /** The W3C trace context the turn's trace continues (DECISIONS §21); an invalid one starts a new trace. */
  traceparent: z.string().max(512).optional(),
  /**
   * Resuming a reply (a retry with the same `idempotency_key`, e.g. on a new connection after a close): only
   * the turn's frames after this `seq` are sent. Ignored when the message starts a new turn.
   */
  after_seq: z.number().int().min(0).max(2_147_483_647).optional(),
  ref: ref.optional(),
});

/** `{type: "interrupt", event_id, ref?}`. */
export const interruptFrame = z.object({
  type: z.literal('interrupt'),
  event_id: z.string({ error: 'event_id is required' }).min(1).max(200),
  ref: ref.optional(),
});

const topicList = z
  .array(z.string(), { error: 'topics must be an array of strings' })
  .min(1, 'topics must not be empty')
  .max(TOPICS.length * 2);

/** `{type: "subscribe", topics}`. */
export const subscribeFrame = z.object({ type: z.literal('subscribe'), topics: topicList, ref: ref.optional() });
/** `{type: "unsubscribe", topics}`. */
export const unsubscribeFrame = z.object({ type: z.literal('unsubscribe'), topics: topicList, ref: ref.optional() });
/** `{type: "ping"}`. */
export const pingFrame = z.object({ type: z.literal('ping'), ref: ref.optional() });

const clientFrame = z.discriminatedUnion('type', [
  authFrame,
  messageFrame,
  interruptFrame,
  subscribeFrame,
  unsubscribeFrame,
  pingFrame,
]);

/** A validated frame from the client. */
export type ClientFrame = z.output<typeof clientFrame>;
/** A validated auth frame. */
export type AuthFrame = z.output<typeof authFrame>;
/** A validated message frame. */
export type MessageFrame = z.output<typeof messageFrame>;
/** The `ref` a client may attach to a frame; echoed on the answers to it. */
export type FrameRef = z.output<typeof ref>;
/** Frame types a client may send. */
export const CLIENT_FRAME_TYPES = ['auth', 'message', 'interrupt', 'subscribe', 'unsubscribe', 'ping'] as const;

/** The error object of an error frame. */
export interface FrameErrorBody {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

/** Every frame the server sends. */
export type ServerFrame =
  | { type: 'auth_ok'; role: 'admin' | 'api' }
  | { type: 'accepted'; ref?: FrameRef; event_id: string; session_key: string }
  | { type: 'delta'; event_id: string; seq: number; content: unknown }
  | { type: 'tool_call'; event_id: string; seq: number; id: unknown; name: unknown; arguments: unknown }
  | { type: 'tool_result'; event_id: string; seq: number; id: unknown; name: unknown; result: unknown }
  | { type: 'final'; event_id: string; seq?: number; status: string; message: unknown }
  | { type: 'error'; ref?: FrameRef; event_id?: string; seq?: number; error: FrameErrorBody }
  | { type: 'subscribed'; topics: Topic[] }
  | { type: 'unsubscribed'; topics: Topic[] }
  | { type: 'event'; topic: Topic; event: string; data: Record<string, unknown> }
  | { type: 'pong' };

/** The outcome of parsing one inbound text frame. */
export type ParsedFrame = { ok: true; frame: ClientFrame } | { ok: false; error: FrameErrorBody; ref?: FrameRef };

function refOf(value: unknown): FrameRef | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const candidate = (value as { ref?: unknown }).ref;
  const parsed = ref.safeParse(candidate);
  return parsed.success ? parsed.data : undefined;
}

/**
 * Parses and validates one text frame. Malformed input (not JSON, JSON
 * over the bounds of every body or with a prototype key (ADR 0013), not an
 * object, unknown type, invalid fields) is a BAD_REQUEST error the
 * connection answers without closing. The `ref` is kept when it is readable.
 */
export function parseClientFrame(text: string): ParsedFrame {
  const parsed = parseJsonBounded(text);
  if (!parsed.ok) {
    if (parsed.reason === 'syntax')
      return { ok: false, error: { code: 'BAD_REQUEST', message: 'frame is not valid JSON' } };
    return { ok: false, error: { code: 'BAD_REQUEST', message: parsed.message, details: parsed.details } };
  }
  const value = parsed.value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, error: { code: 'BAD_REQUEST', message: 'frame must be a JSON object' } };
  }
  const type = (value as { type?: unknown }).type;
  const frameRef = refOf(value);
  const withRef = frameRef !== undefined ? { ref: frameRef } : {};
  if (typeof type !== 'string' || !(CLIENT_FRAME_TYPES as readonly string[]).includes(type)) {
    return {
      ok: false,
      error: {
        code: 'BAD_REQUEST',
        message: `unknown frame type; expected one of ${CLIENT_FRAME_TYPES.join(', ')}`,
      },
      ...withRef,
    };
  }
  const result = clientFrame.safeParse(value);
  if (!result.success) {
    const issues = result.error.issues.map((issue) => ({
      path: issue.path.map(String).join('.'),
      message: issue.message,
    }));
    const first = issues[0];
    return {
      ok: false,
      error: {
        code: 'BAD_REQUEST',
        message: first ? `invalid ${type} frame: ${first.path || 'frame'}: ${first.message}` : `invalid ${type} frame`,
        details: { issues },
      },
      ...withRef,
    };
  }
  return { ok: true, frame: result.data };
}

/** Splits requested topic names into known topics (deduplicated, in request order) and unknown names. */
export function resolveTopics(names: readonly string[]): { topics: Topic[]; unknown: string[] } {
  const known = new Set<string>(TOPICS);
  const topics: Topic[] = [];
  const unknown: string[] = [];
  for (const name of names) {
    if (!known.has(name)) unknown.push(name);
    else if (!topics.includes(name as Topic)) topics.push(name as Topic);
  }
  return { topics, unknown };
}

/**
 * The error body for anything thrown while handling a frame, with the HTTP
 * codes' names (DECISIONS §8): ApiError keeps its code, the idempotency
 * conflict is CONFLICT, a store outage UNAVAILABLE; anything else is
 * INTERNAL_ERROR with a generic message (`unexpected: true` tells the caller
 * to log the cause).
 */
export function frameErrorOf(err: unknown): FrameErrorBody & { unexpected: boolean } {
  const { error, log } = classifyError(err);
  if (log === 'error') return { code: 'INTERNAL_ERROR', message: 'internal error', unexpected: true };
  const details = Array.isArray(error.details) ? { issues: error.details } : error.details;
  return {
    code: error.code,
    message: error.message,
    ...(Object.keys(details).length > 0 ? { details } : {}),
    unexpected: false,
  };
}

const ERROR_CODES: ReadonlySet<string> = new Set(Object.keys(ERROR_STATUS));

/** `{seq}` when the step came from a turn event, else nothing. */
function seqOf(seq: number | null): { seq?: number } {
  return seq === null ? {} : { seq };
}

/** What one turn event means for the client following that turn. */
export type TurnFrameStep =
  /** Send the frame; the turn goes on. */
  | { kind: 'frame'; frame: ServerFrame }
  /** Send the frame; the reply to the message is complete. */
  | { kind: 'end'; frame: ServerFrame }
  /** Nothing to send. */
  | { kind: 'skip' };

/**
 * Maps one turn event to the frame a follower gets (DECISIONS §8), as
 * `followStepFrame` does for the step the door makes of it: a pause ends
 * the reply only when seen live (a replayed pause may since have been
 * resumed, so the ledger decides then).
 */
export function turnEventStep(event: TurnEvent, options: { live: boolean; ref?: FrameRef }): TurnFrameStep {
  return followStepFrame(readyStep({ kind: 'event', event, live: options.live }, true), event.eventId, options.ref);
}

/**
 * What one step of following a turn means for the client (DECISIONS §8):
 * a frame to send and whether the reply is complete with it. `delta`,
 * `tool_call`, `tool_result` as they are; a pause or an end → `final` with
 * the Message; a failed turn → an error frame (with the `ref` of the
 * message); other status changes are not sent. Every frame of a turn event
 * carries its `seq`, the number a resumed reply continues after
 * (`after_seq` of a retried `message`); an end the ledger reported without
 * an event has none.
 */
export function followStepFrame(step: TurnStep, eventId: string, ref: FrameRef | undefined): TurnFrameStep {
  const withRef = ref !== undefined ? { ref } : {};
  switch (step.kind) {
    case 'delta':
      return { kind: 'frame', frame: { type: 'delta', event_id: eventId, seq: step.seq, content: step.content } };
    case 'tool_call':
      return {
        kind: 'frame',
        frame: {
          type: 'tool_call',
          event_id: eventId,
          seq: step.seq,
          id: step.id,
          name: step.name,
          arguments: step.arguments,
        },
      };
    case 'tool_result':
      return {
        kind: 'frame',
        frame: {
          type: 'tool_result',
          event_id: eventId,
          seq: step.seq,
          id: step.id,
          name: step.name,
          result: step.result,
        },
      };
    case 'status':
      return { kind: 'skip' };
    case 'paused':
      return {
        kind: 'end',
        frame: { type: 'final', event_id: eventId, ...seqOf(step.seq), status: step.status, message: step.message },
      };
    case 'ended': {
      if (!step.error) {
        return {
          kind: 'end',
          frame: { type: 'final', event_id: eventId, ...seqOf(step.seq), status: step.status, message: step.message },
        };
      }
      const code = ERROR_CODES.has(step.error.code) ? (step.error.code as ErrorCode) : 'INTERNAL_ERROR';
      return {
        kind: 'end',
        frame: {
          type: 'error',
          ...withRef,
          event_id: eventId,
          ...seqOf(step.seq),
          error: { code, message: step.error.message },
        },
      };
    }
    case 'timeout':
      return {
        kind: 'end',
        frame: {
          type: 'error',
          ...withRef,
          event_id: eventId,
          error: {
            code: 'TIMEOUT',
            message: 'stopped following the turn; it goes on — retry with the same idempotency key for the result',
          },
        },
      };
  }
}
