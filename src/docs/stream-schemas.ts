import { z } from 'zod';
import { logLevels } from '../config/config.schema.js';
import { TOPICS } from '../events/index.js';
import { ERROR_STATUS, type ErrorCode } from '../http/errors.js';

/**
 * The payloads of every stream the gateway sends (ADR 0017): the SSE events
 * of the message stream, of a turn's events and of the log follow, and the
 * WebSocket's server frames. Written once here; `asyncapi.ts` turns them into
 * the AsyncAPI document, and the producing code builds its payloads with the
 * types inferred from them. Client frames are validated where they are read
 * (`websocket.frames.ts`), and the document uses those schemas as they are.
 */

const errorCodes = Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]];

/** The error object of an `error` event or frame (the API envelope's `error`). */
export const streamErrorSchema = z
  .object({
    code: z.enum(errorCodes),
    message: z.string(),
    details: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ title: 'Error', description: 'The error object of the API envelope' });

/** The Message a turn ends with (DECISIONS §5). */
export const streamMessageSchema = z
  .object({
    id: z.string(),
    role: z.literal('assistant'),
    content: z.string(),
    tool_calls: z.array(
      z.object({ id: z.string(), name: z.string(), arguments: z.string(), result: z.unknown().optional() }),
    ),
    cost: z.object({
      input_tokens: z.number().int().min(0),
      output_tokens: z.number().int().min(0),
      total_usd: z.number().min(0),
    }),
    status: z.string().meta({ description: 'The turn status' }),
    event_id: z.string(),
  })
  .meta({ title: 'Message' });

/** `accepted`: the first event of the message stream, naming the turn (`id: 0`). */
export const acceptedEventSchema = z.object({ event_id: z.string(), session_key: z.string() }).meta({
  title: 'accepted',
  description:
    'First event of the message stream (`id: 0`): the turn it follows, resumable through GET /turns/{event_id}/events',
});
/** `status`: the turn's status changed (`running`, a pause, an end). */
export const statusEventSchema = z
  .looseObject({ status: z.string(), message: streamMessageSchema.optional() })
  .meta({ title: 'status', description: 'The turn status changed; a pause carries the waiting Message' });
/** `delta`: a piece of the reply text. */
export const deltaEventSchema = z.object({ content: z.string() }).meta({ title: 'delta' });
/** `tool_call`: the model called a tool (`arguments` is the JSON text the model produced). */
export const toolCallEventSchema = z
  .object({ id: z.string(), name: z.string(), arguments: z.string() })
  .meta({ title: 'tool_call' });
/** `tool_result`: a tool answered. */
export const toolResultEventSchema = z
  .object({ id: z.string(), name: z.string(), result: z.unknown() })
  .meta({ title: 'tool_result' });
/** `done`: the final event of a completed (or paused, on the message stream) turn, carrying its Message. */
export const doneEventSchema = streamMessageSchema.meta({ title: 'done', description: 'The final event: the Message' });
/** `error`: the final event of a failed turn (or a stream that could not go on), carrying the error object. */
export const errorEventSchema = streamErrorSchema.meta({ title: 'error', description: 'The final event: the error' });

/** `log`: one log entry of GET /logs?follow=true (spec: Log entry). */
export const logEventSchema = z
  .object({
    timestamp: z.string().meta({ description: 'ISO 8601 UTC with milliseconds' }),
    level: z.enum(logLevels),
    source: z.string(),
    message: z.string(),
    metadata: z.record(z.string(), z.unknown()),
  })
  .meta({ title: 'log' });

/** The SSE event `accepted` of the message stream. */
export type AcceptedEvent = z.output<typeof acceptedEventSchema>;
/** The SSE event `log` of the log follow. */
export type LogEvent = z.output<typeof logEventSchema>;

/** The events every turn stream carries: the turn's output, then its end. */
const TURN_OUTPUT_EVENTS = {
  delta: deltaEventSchema,
  tool_call: toolCallEventSchema,
  tool_result: toolResultEventSchema,
  done: doneEventSchema,
  error: errorEventSchema,
} as const;

/** SSE events of the message stream, by event name (DECISIONS §5). */
export const MESSAGE_STREAM_EVENTS = { accepted: acceptedEventSchema, ...TURN_OUTPUT_EVENTS } as const;

/** SSE events of GET /turns/{event_id}/events, by event name (DECISIONS §5). */
export const TURN_STREAM_EVENTS = { status: statusEventSchema, ...TURN_OUTPUT_EVENTS } as const;

/** SSE events of GET /logs?follow=true. */
export const LOG_STREAM_EVENTS = { log: logEventSchema } as const;

const frameRef = z.union([z.string(), z.number()]);
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
  delta: z.object({ type: z.literal('delta'), event_id: z.string(), content: z.string() }),
  tool_call: z.object({
    type: z.literal('tool_call'),
    event_id: z.string(),
    id: z.string(),
    name: z.string(),
    arguments: z.string(),
  }),
  tool_result: z.object({
    type: z.literal('tool_result'),
    event_id: z.string(),
    id: z.string(),
    name: z.string(),
    result: z.unknown(),
  }),
  final: z.object({
    type: z.literal('final'),
    event_id: z.string(),
    status: z.string(),
    message: streamMessageSchema.nullable(),
  }),
  error: z.object({
    type: z.literal('error'),
    ref: frameRef.optional(),
    event_id: z.string().optional(),
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
