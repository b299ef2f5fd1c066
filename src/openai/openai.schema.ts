import { z } from 'zod';
import { objectBody } from '../http/validation.js';

/**
 * The request shapes of the OpenAI-compatible API (DECISIONS §13, ADR 0015):
 * what OpenAI clients send, bounded. Unknown fields (`temperature`, `top_p`,
 * `max_tokens`, `seed`…) are dropped: the agent's configuration decides them.
 */

/** The one model the API offers: the agent with its configured provider model. */
export const GATEHOUSE_MODEL = 'gatehouse';

/** At most this many messages in one request (the body size bounds them too). */
export const MAX_REQUEST_MESSAGES = 1_000;
/** At most this many content parts in one message. */
export const MAX_CONTENT_PARTS = 100;

// Control characters: C0, DEL and C1.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * A conversation id given by the client (`user`, `X-Session-Key`): the chat
 * id of `gateway:openai:<id>`. A leading `~` is kept for the gateway's own
 * fresh sessions.
 */
export const chatIdSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(200, 'at most 200 characters')
  .refine((value) => !CONTROL.test(value), 'must not contain control characters')
  .refine((value) => !value.startsWith('~'), 'must not start with "~"');

/** Client-side tools are not supported (ADR 0015): an empty list is tolerated, anything in it is 400. */
const noClientTools = z
  .array(z.unknown())
  .max(0, 'client-side tools are not supported; the agent uses its own tools')
  .nullable()
  .optional();

const textPart = z.object({
  type: z.literal('text', { error: 'only text content parts are supported' }),
  text: z.string(),
});

/** A message's content: a string, or text parts as OpenAI allows. */
const content = z.union([z.string(), z.array(textPart).max(MAX_CONTENT_PARTS)], {
  error: 'content must be a string or an array of text parts',
});

const message = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant'], {
    error: 'role must be system, developer, user or assistant (client-side tools are not supported)',
  }),
  content: content.nullable().optional(),
  tool_calls: noClientTools,
});

/** One request message as validated. */
export type RequestMessage = z.output<typeof message>;

/** POST /v1/chat/completions. */
export const completionBody = objectBody({
  model: z.string({ error: 'model is required' }).min(1, 'model is required').max(200),
  messages: z
    .array(message, { error: 'messages must be an array' })
    .min(1, 'messages must not be empty')
    .max(MAX_REQUEST_MESSAGES, `at most ${MAX_REQUEST_MESSAGES} messages`),
  stream: z.boolean().nullable().optional(),
  stream_options: z.object({ include_usage: z.boolean().nullable().optional() }).nullable().optional(),
  user: chatIdSchema.optional(),
  n: z.number().int().min(1).max(1, 'only n = 1 is supported').nullable().optional(),
  tools: noClientTools,
  functions: noClientTools,
});

/** A validated completion request. */
export type CompletionRequest = z.output<typeof completionBody>;

/** The text of a message's content: a string, or its text parts joined; '' when absent. */
export function contentText(value: RequestMessage['content']): string {
  if (typeof value === 'string') return value;
  if (!value) return '';
  return value.map((part) => part.text).join('');
}

/** The error body of the OpenAI-compatible routes (OpenAI's shape; the status is the API's). */
export const openAiErrorSchema = z
  .object({
    error: z.object({
      message: z.string(),
      type: z.string().meta({ description: 'e.g. invalid_request_error, authentication_error, rate_limit_error' }),
      code: z.string().meta({ description: 'the Gatehouse error code lowercased, or OpenAI’s (model_not_found)' }),
      param: z.null(),
    }),
  })
  .meta({ id: 'OpenAIError', description: 'An error of the OpenAI-compatible API, in OpenAI’s shape' });
