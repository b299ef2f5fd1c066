import { z } from 'zod';

/**
 * The WebSocket protocol as the chat client speaks it (DECISIONS §8): the frames it sends, and the server frames it
 * reads, validated loosely (unknown fields are ignored, unknown frame types are skipped) so a newer gateway does not
 * break an older client.
 */

const tokenRole = z.enum(['admin', 'api']);
const errorBody = z.object({
  code: z.string(),
  message: z.string().default(''),
  details: z.record(z.string(), z.unknown()).optional(),
});
const ref = z.union([z.string(), z.number()]).optional();

/** The tool calls of a Message as the gateway reports them. */
const messageToolCall = z.object({
  id: z.string(),
  name: z.string(),
  arguments: z.unknown().optional(),
  result: z.unknown().optional(),
});

/** The Message a `final` frame carries (DECISIONS §5), as far as the client reads it. */
const messageView = z.object({
  content: z.string().nullable().optional(),
  tool_calls: z.array(messageToolCall).optional(),
  cost: z
    .object({
      input_tokens: z.number().optional(),
      output_tokens: z.number().optional(),
      total_usd: z.number().optional(),
    })
    .optional(),
});

const serverFrame = z.discriminatedUnion('type', [
  z.object({ type: z.literal('auth_ok'), role: tokenRole }),
  z.object({ type: z.literal('accepted'), ref, event_id: z.string(), session_key: z.string() }),
  z.object({ type: z.literal('delta'), event_id: z.string(), content: z.unknown() }),
  z.object({
    type: z.literal('tool_call'),
    event_id: z.string(),
    id: z.unknown(),
    name: z.unknown(),
    arguments: z.unknown(),
  }),
  z.object({
    type: z.literal('tool_result'),
    event_id: z.string(),
    id: z.unknown(),
    name: z.unknown(),
    result: z.unknown(),
  }),
  z.object({ type: z.literal('final'), event_id: z.string(), status: z.string(), message: messageView.nullable() }),
  z.object({ type: z.literal('error'), ref, event_id: z.string().optional(), error: errorBody }),
  z.object({ type: z.literal('pong') }),
  // The live feed (subscribed while a turn waits for a decision that another client may make).
  z.object({ type: z.literal('subscribed'), topics: z.array(z.string()) }),
  z.object({
    type: z.literal('event'),
    topic: z.string(),
    event: z.string(),
    data: z.record(z.string(), z.unknown()),
  }),
]);

/** A server frame the client understands. */
export type ServerFrame = z.output<typeof serverFrame>;
/** The Message of a `final` frame. */
export type MessageView = z.output<typeof messageView>;
/** The error object of an `error` frame. */
export type FrameError = z.output<typeof errorBody>;
/** The role the token was granted. */
export type TokenRole = z.output<typeof tokenRole>;

/** Parses one text frame; null for anything that is not a frame this client understands. */
export function parseServerFrame(text: string): ServerFrame | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = serverFrame.safeParse(value);
  return parsed.success ? parsed.data : null;
}

/** The chat identity sent with the auth frame; absent fields take the gateway's defaults. */
export interface ChatIdentity {
  user_id?: string;
}

/** `{type: "auth", token, …identity}`: the first frame (the token never travels in the URL). */
export function authFrame(token: string | null, identity: ChatIdentity): string {
  return JSON.stringify({ type: 'auth', ...(token !== null ? { token } : {}), ...identity });
}

/** A user message: `{type: "message", text, session_key, idempotency_key, ref}` (the key doubles as the ref). */
export interface OutgoingMessage {
  text: string;
  sessionKey: string;
  idempotencyKey: string;
}

/** The message frame of `message`; sent again unchanged after a reconnect, so the gateway answers by replay. */
export function messageFrame(message: OutgoingMessage): string {
  return JSON.stringify({
    type: 'message',
    text: message.text,
    session_key: message.sessionKey,
    idempotency_key: message.idempotencyKey,
    ref: message.idempotencyKey,
  });
}

/** `{type: "interrupt", event_id}`. */
export function interruptFrame(eventId: string): string {
  return JSON.stringify({ type: 'interrupt', event_id: eventId, ref: `interrupt:${eventId}` });
}

/** `{type: "subscribe"|"unsubscribe", topics}`: the live feed's topics (DECISIONS §8). */
export function topicsFrame(type: 'subscribe' | 'unsubscribe', topics: readonly string[]): string {
  return JSON.stringify({ type, topics });
}

/** Close codes after which reconnecting cannot help (DECISIONS §8): bad identity, bad token, refused identity. */
export const FATAL_CLOSE_CODES: ReadonlyMap<number, string> = new Map([
  [4400, 'the gateway refused the chat identity'],
  [4401, 'the gateway refused the token'],
  [4403, "the gateway's auth mode does not allow this chat identity"],
]);
