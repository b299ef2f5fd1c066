import { z } from 'zod';
import { objectBody, q } from '../http/validation.js';

/** `{session_id}`: the session key, URL-encoded in the path (DECISIONS §5). */
export const sessionParams = z.object({ session_id: z.string().min(1) });

/** GET /sessions (cursor pagination, DECISIONS §2). */
export const listQuery = z.object({
  channel: z.string().min(1).optional(),
  principal: z.string().min(1).optional().describe("Admins: only this principal's sessions (DECISIONS §18)"),
  status: z.enum(['active', 'archived', 'all']).optional(),
  limit: q.int(1, 100, 20),
  cursor: z.string().min(1).optional(),
  q: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .optional()
    .describe(
      'Only sessions with a message of their current context containing this text (case-insensitive for ASCII); each item then carries `match`',
    ),
});

/** POST /sessions `{channel, metadata}`. */
export const createBody = objectBody({
  channel: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, _ . - (1..64)')
    .optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  agent: z.string().min(1).max(64).optional().describe('The agent that runs it (DECISIONS §17); default: by bindings'),
}).optional();

/** GET /sessions/{id}/history. */
export const historyQuery = z.object({ limit: q.int(1, 500, 100) });

/*
 * Response shapes (the presenters' output), declared on the routes for the
 * OpenAPI document; the response-schema test parses real answers with them.
 */

/** ISO 8601 UTC with milliseconds (DECISIONS §2). */
const timestamp = z.iso.datetime({ precision: 3 }).describe('ISO 8601 UTC with milliseconds');

/** A session (spec: Session, variant A; DECISIONS §5). */
export const sessionSchema = z
  .object({
    id: z.string().describe('The session key `gateway:<platform>:<chat_id>`'),
    title: z
      .string()
      .describe('A readable name: its first user message (cut to 60 characters), else `<platform> · <user>`'),
    channel: z.string(),
    created_at: timestamp,
    last_active: timestamp,
    message_count: z.number().int().min(0),
    status: z.enum(['active', 'archived']),
    metadata: z.record(z.string(), z.unknown()),
    agent: z.string().describe('The agent that runs its turns, decided at creation (DECISIONS §17)'),
    match: z
      .object({
        message_id: z.string(),
        role: z.string(),
        event_id: z.string().nullable().describe('The turn that produced it'),
        created_at: timestamp,
        snippet: z.string().describe('Its text around the match, on one line'),
      })
      .optional()
      .describe('With `q`: the newest message of its current context containing the text'),
  })
  .meta({ id: 'Session', description: 'A session, identified by its key (spec: Session)' });

/** GET /sessions: one page, with cursor pagination (DECISIONS §2). */
export const sessionListSchema = z
  .object({
    items: z.array(sessionSchema),
    pagination: z.object({
      cursor: z.string().nullable().describe('Opaque cursor of the next page; null on the last page'),
      has_more: z.boolean(),
      total: z.number().int().min(0).describe('Sessions matching the filters, all pages'),
    }),
  })
  .meta({ id: 'SessionList', description: 'One page of sessions, newest activity first' });

/** DELETE /sessions/{id}. */
export const sessionDeletedSchema = z
  .object({ id: z.string(), deleted: z.literal(true) })
  .describe('The session is deleted: its messages and context are gone, memory stays');

/** One entry of a session's history (DECISIONS §5); the tool fields only where they apply. */
export const historyEntrySchema = z
  .object({
    id: z.string(),
    role: z.enum(['user', 'assistant', 'tool', 'system']),
    content: z.string().nullable().describe('Null for an assistant message that only calls tools'),
    created_at: timestamp,
    event_id: z.string().nullable().describe('The turn that produced it'),
    tool_calls: z
      .array(z.object({ id: z.string(), name: z.string(), arguments: z.string() }))
      .optional()
      .describe("An assistant message's tool calls (`arguments`: the JSON text the model produced)"),
    tool_call_id: z.string().optional().describe('A tool message: the call it answers'),
    name: z.string().optional().describe('A tool message: the tool'),
  })
  .meta({ id: 'HistoryEntry', description: "One message of a session's history" });

/** GET /sessions/{id}/history: the newest `limit` entries, in chronological order. */
export const historySchema = z
  .object({
    items: z.array(historyEntrySchema),
    total: z.number().int().min(0).describe('Every entry of the history, of which the newest `returned` are here'),
    returned: z.number().int().min(0),
  })
  .meta({ id: 'SessionHistory', description: 'The newest history entries of a session, oldest first' });
