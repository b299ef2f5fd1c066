import { z } from 'zod';
import { objectBody } from '../http/validation.js';

/**
 * The request shape of the OpenAI Responses API (DECISIONS §22, ADR 0041):
 * what the official SDK sends, bounded. Unknown fields (`temperature`,
 * `max_output_tokens`, `metadata`, `reasoning`…) are dropped: the agent's
 * configuration decides them.
 */

/** The prefix of a response id: `resp_` + the turn's event id. */
export const RESPONSE_ID_PREFIX = 'resp_';

/** At most this many input items in one request (the body size bounds them too). */
export const MAX_INPUT_ITEMS = 1_000;
/** At most this many content parts in one message item. */
export const MAX_CONTENT_PARTS = 100;

const textPart = z.object({
  type: z.enum(['input_text', 'output_text'], { error: 'only input_text and output_text parts are supported' }),
  text: z.string(),
});

/** A message item: `{role, content}` (the SDK's easy input message) or `{type: 'message', role, content}`. */
const messageItem = z.object({
  type: z.literal('message', { error: 'only message input items are supported' }).optional(),
  role: z.enum(['system', 'developer', 'user', 'assistant'], {
    error: 'role must be system, developer, user or assistant',
  }),
  content: z.union([z.string(), z.array(textPart).max(MAX_CONTENT_PARTS)], {
    error: 'content must be a string or an array of text parts',
  }),
});

/** One input message as validated. */
export type InputMessage = z.output<typeof messageItem>;

/** Client-side tools are not supported: an empty list is tolerated, anything in it is 400. */
const noClientTools = z
  .array(z.unknown())
  .max(0, 'client-side tools are not supported; the agent uses its own tools')
  .nullable()
  .optional();

/** POST /v1/responses. */
export const responseBody = objectBody({
  model: z.string({ error: 'model is required' }).min(1, 'model is required').max(200),
  input: z.union(
    [
      z.string().min(1, 'input must not be empty'),
      z.array(messageItem).min(1, 'input must not be empty').max(MAX_INPUT_ITEMS, `at most ${MAX_INPUT_ITEMS} items`),
    ],
    { error: 'input must be a string or an array of message items' },
  ),
  instructions: z.string().max(100_000).nullable().optional(),
  previous_response_id: z.string().min(1).max(300).nullable().optional(),
  store: z.boolean().nullable().optional(),
  stream: z.boolean().nullable().optional(),
  background: z.boolean().nullable().optional(),
  tools: noClientTools,
});

/** A validated Responses request. */
export type ResponseRequest = z.output<typeof responseBody>;

/** The text of an input message: a string, or its parts joined. */
export function messageText(item: InputMessage): string {
  return typeof item.content === 'string' ? item.content : item.content.map((part) => part.text).join('');
}

/** `{id}` of GET /v1/responses/{id} and its cancel. */
export const responseParams = z.object({ id: z.string().min(1).max(300) });
