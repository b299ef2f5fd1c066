import { ApiError, type ErrorCode } from '../http/errors.js';
import type { ErrorBodyWriter } from '../http/route.js';
import { GATEHOUSE_MODEL } from './openai.schema.js';

/**
 * OpenAI's wire shapes (DECISIONS §13): `chat.completion`,
 * `chat.completion.chunk`, the model list and the error object
 * `{error: {message, type, code, param: null}}`.
 */

/** Token counts as OpenAI reports them. */
export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** Why a completion ended, as OpenAI names it. */
export type FinishReason = 'stop' | 'length';

/** The completion id of a turn: `chatcmpl-<event id>`, the same on every replay. */
export function completionId(eventId: string): string {
  return `chatcmpl-${eventId}`;
}

/** A non-streaming answer: the `chat.completion` object. */
export function presentCompletion(input: {
  eventId: string;
  created: number;
  content: string;
  finishReason: FinishReason;
  usage: CompletionUsage;
}): Record<string, unknown> {
  return {
    id: completionId(input.eventId),
    object: 'chat.completion',
    created: input.created,
    model: GATEHOUSE_MODEL,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: input.content, refusal: null },
        logprobs: null,
        finish_reason: input.finishReason,
      },
    ],
    usage: input.usage,
    system_fingerprint: null,
  };
}

/** One `chat.completion.chunk` with a delta (and the finish reason on the last one). */
export function presentChunk(
  eventId: string,
  created: number,
  delta: Record<string, unknown>,
  finishReason: FinishReason | null = null,
): Record<string, unknown> {
  return {
    id: completionId(eventId),
    object: 'chat.completion.chunk',
    created,
    model: GATEHOUSE_MODEL,
    system_fingerprint: null,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
}

/** The usage chunk sent after the last one when `stream_options.include_usage` is set: no choices. */
export function presentUsageChunk(eventId: string, created: number, usage: CompletionUsage): Record<string, unknown> {
  return {
    id: completionId(eventId),
    object: 'chat.completion.chunk',
    created,
    model: GATEHOUSE_MODEL,
    system_fingerprint: null,
    choices: [],
    usage,
  };
}

/** GET /v1/models: OpenAI's list shape: `gatehouse`, then `gatehouse/<agent>` for each agent given. */
export function presentModelList(created: number, agents: readonly string[] = []): Record<string, unknown> {
  const ids = [GATEHOUSE_MODEL, ...agents.map((agent) => `${GATEHOUSE_MODEL}/${agent}`)];
  return { object: 'list', data: ids.map((id) => ({ id, object: 'model', created, owned_by: 'gatehouse' })) };
}

/** An error with OpenAI's own `type` and `code` where they differ from the Gatehouse code's (e.g. `model_not_found`). */
export class OpenAiError extends ApiError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly openAi: { type: string; code: string },
  ) {
    super(code, message);
    this.name = 'OpenAiError';
  }
}

/** The unknown model: 404 as OpenAI answers it. */
export function modelNotFound(model: string): OpenAiError {
  return new OpenAiError(
    'NOT_FOUND',
    `The model '${model}' does not exist; this gateway offers '${GATEHOUSE_MODEL}' and '${GATEHOUSE_MODEL}/<agent>' (GET /v1/models).`,
    {
      type: 'invalid_request_error',
      code: 'model_not_found',
    },
  );
}

/** OpenAI's error `type` for each Gatehouse code. */
const ERROR_TYPES: Record<ErrorCode, string> = {
  BAD_REQUEST: 'invalid_request_error',
  UNAUTHORIZED: 'authentication_error',
  FORBIDDEN: 'permission_error',
  NOT_FOUND: 'not_found_error',
  CONFLICT: 'invalid_request_error',
  PAYLOAD_TOO_LARGE: 'invalid_request_error',
  RATE_LIMITED: 'rate_limit_error',
  INTERNAL_ERROR: 'server_error',
  UPSTREAM_ERROR: 'server_error',
  UNAVAILABLE: 'server_error',
  TIMEOUT: 'server_error',
};

/** The message of an error; validation issues are listed in it (OpenAI's shape has no details). */
function messageOf(error: ApiError): string {
  if (!Array.isArray(error.details) || error.details.length === 0) return error.message;
  const issues = error.details.slice(0, 10).map((issue) => `${issue.path}: ${issue.message}`);
  return `${error.message}: ${issues.join('; ')}`;
}

/**
 * The error body of the OpenAI-compatible paths (RouteDef `errorBody`):
 * `{error: {message, type, code, param: null}}`, `code` the Gatehouse code
 * lowercased or OpenAI's own; the status and headers stay the API's.
 */
export const openAiErrorBody: ErrorBodyWriter = (error) => ({
  error: {
    message: messageOf(error),
    type: error instanceof OpenAiError ? error.openAi.type : ERROR_TYPES[error.code],
    code: error instanceof OpenAiError ? error.openAi.code : error.code.toLowerCase(),
    param: null,
  },
});
