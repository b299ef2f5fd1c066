import { z } from 'zod';
import { TOPICS } from '../../events/index.js';
import { streamErrorSchema, streamMessageSchema } from '../../turns/index.js';

/**
 * Every frame the WebSocket server sends (DECISIONS §8, ADR 0017), owned
 * beside the channel that sends them; `docs/` turns them into the AsyncAPI
 * document. Client frames are validated where they are read
 * (`websocket.frames.ts`).
 */

const frameRef = z.union([z.string(), z.number()]);
/** The turn event's number: a retried `message` with `after_seq` resumes after it. */
const seq = z
  .number()
  .int()
  .min(1)
  .describe("The turn event's number; resume after it with a retried message's after_seq");
const topic = z.enum(TOPICS);

/** Every frame the WebSocket server sends (DECISIONS §8), by type. */
export const SERVER_FRAMES = {
  auth_ok: z.object({ type: z.literal('auth_ok'), role: z.enum(['admin', 'api']) }),
  accepted: z.object({
    type: z.literal('accepted'),
    ref: frameRef.optional(),
    event_id: z.string(),
    session_key: z.string(),
  }),
  delta: z.object({ type: z.literal('delta'), event_id: z.string(), seq, content: z.string() }),
  tool_call: z.object({
    type: z.literal('tool_call'),
    event_id: z.string(),
    seq,
    id: z.string(),
    name: z.string(),
    arguments: z.string(),
  }),
  tool_result: z.object({
    type: z.literal('tool_result'),
    event_id: z.string(),
    seq,
    id: z.string(),
    name: z.string(),
    result: z.unknown(),
  }),
  final: z.object({
    type: z.literal('final'),
    event_id: z.string(),
    seq: seq.optional(),
    status: z.string(),
    message: streamMessageSchema.nullable(),
  }),
  error: z.object({
    type: z.literal('error'),
    ref: frameRef.optional(),
    event_id: z.string().optional(),
    seq: seq.optional(),
    error: streamErrorSchema,
  }),
  subscribed: z.object({ type: z.literal('subscribed'), topics: z.array(topic) }),
  unsubscribed: z.object({ type: z.literal('unsubscribed'), topics: z.array(topic) }),
  event: z.object({
    type: z.literal('event'),
    topic,
    event: z.string(),
    data: z.record(z.string(), z.unknown()),
  }),
  pong: z.object({ type: z.literal('pong') }),
} as const;

/** A server frame as the schemas describe it (every such frame is a `ServerFrame` of the WebSocket). */
export type DescribedServerFrame = z.output<(typeof SERVER_FRAMES)[keyof typeof SERVER_FRAMES]>;
