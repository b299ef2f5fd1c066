import { z } from 'zod';
import { streamMessageSchema } from './turns.stream-schema.js';
import { TURN_STATUSES } from './turn-status.js';

/*
 * Response shapes of the message and turn routes (the presenters' output),
 * declared on the routes for the OpenAPI document; the response-schema test
 * parses real answers with them.
 */

/** ISO 8601 UTC with milliseconds (DECISIONS §2). */
const timestamp = z.iso.datetime({ precision: 3 }).describe('ISO 8601 UTC with milliseconds');

/** The statuses a waited-for turn answers with: its end or a pause (a failed turn answers an error). */
const ANSWERED_STATUSES = [
  'completed',
  'incomplete',
  'interrupted',
  'waiting_approval',
  'waiting_clarification',
] as const satisfies readonly (typeof TURN_STATUSES)[number][];

/** A turn record of the ledger (spec: Turn status; DECISIONS §5). */
export const turnSchema = z
  .object({
    event_id: z.string(),
    session_key: z.string(),
    status: z.enum(TURN_STATUSES),
    current_tool: z.string().nullable().describe('The tool running or waited on; null otherwise'),
    pending_tool_call: z
      .object({
        id: z.string(),
        name: z.string(),
        arguments: z.string().describe('The JSON text of the arguments, as the model produced it'),
      })
      .nullable()
      .describe(
        'The tool call a paused turn waits on (the call to approve, or the question asked), so a person decides ' +
          'knowing what would run; null when the turn is not paused',
      ),
    response: z.string().nullable().describe('The reply text so far; null before any'),
    termination_reason: z
      .string()
      .nullable()
      .describe('Why it ended (`completed`, `max_tool_iterations`, `process_restart`…); null while open'),
    context_epoch: z.number().int().min(0),
    accepted_at: timestamp,
    started_at: timestamp.nullable(),
    finished_at: timestamp.nullable(),
    updated_at: timestamp,
    trace_id: z
      .string()
      .nullable()
      .describe('The OpenTelemetry trace id of the turn (32 hex) when it was accepted with tracing on; null otherwise'),
    source: z
      .string()
      .nullable()
      .describe(
        'Where its message came in: `api`, `session`, `websocket`, `webhook`, `platform`, `task`, `cron`, `openai` (chat completions), `responses` (Responses API), `mcp`…',
      ),
  })
  .meta({ id: 'Turn', description: 'A turn of the ledger: one inbound message and its run' });

/** GET /sessions/{id}/turns. */
export const turnListSchema = z
  .object({ items: z.array(turnSchema) })
  .meta({ id: 'TurnList', description: "A session's turns, newest first" });

/** GET /turns: turns across sessions, oldest first, and where the next page starts. */
export const turnPageSchema = z
  .object({
    items: z.array(turnSchema),
    next_after: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'Pass as `after` for the next page; null on the last page' }),
  })
  .meta({ id: 'TurnPage', description: 'Turns across sessions, oldest first' });

/** POST /message without wait: the message is durably accepted (spec: Message submission). */
export const messageAcceptedSchema = z
  .object({
    status: z.literal('accepted'),
    event_id: z.string().describe('The turn: GET /turns/{event_id}, GET /turns/{event_id}/events'),
    session_key: z.string(),
  })
  .meta({ id: 'MessageAccepted', description: 'Accepted: the turn runs on (spec: rule 5)' });

/**
 * POST /message with wait: the turn's final state and its Message (the same
 * object the message stream's `done` event carries). Lazy: the stream
 * schemas are read when the document is built, whatever order the modules
 * load in.
 */
export const messageResultSchema = z
  .object({
    status: z.enum(ANSWERED_STATUSES),
    event_id: z.string(),
    session_key: z.string(),
    response: z.string().nullable().describe('The reply text; null when the turn ended or paused without one'),
    message: z.lazy(() => streamMessageSchema),
  })
  .meta({ id: 'MessageResult', description: "The turn's final state or pause, with its Message" });
