import { z } from 'zod';
import { ERROR_STATUS, type ErrorCode } from '../http/errors.js';

/**
 * The payloads of the turn streams (ADR 0017), owned here beside the code
 * that produces them: the SSE events of the message stream
 * (POST /sessions/{id}/messages) and of a turn's events
 * (GET /turns/{event_id}/events), and the Message a turn ends with. The
 * producing code builds its payloads with the types inferred from them;
 * `docs/` turns them into the AsyncAPI document.
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
  .looseObject({
    status: z.string(),
    message: streamMessageSchema.optional(),
    resolution: z
      .enum(['approve', 'deny', 'answer'])
      .optional()
      .meta({ description: 'On `running` after a pause: how a person resolved it (approved, denied, answered)' }),
  })
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

/** The SSE event `accepted` of the message stream. */
export type AcceptedEvent = z.output<typeof acceptedEventSchema>;

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
