/**
 * Errors as the dashboard shows them: the API's envelope (`{error: {code, message, details, request_id}}`,
 * DECISIONS §3) becomes an `ApiError` carrying the message, the code and the request id, so every notice can
 * name the request an operator would look up in the logs.
 */

/** An error answer of the API. `requestId` comes from the envelope or, failing that, the `X-Request-Id` header. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | undefined,
    readonly requestId: string | undefined,
    readonly details: unknown = undefined,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

interface EnvelopeBody {
  error?: { code?: unknown; message?: unknown; request_id?: unknown; details?: unknown } | string;
}

/** Builds the `ApiError` of an error answer from its parsed body (any shape) and the response. */
export function apiError(body: unknown, response: Response): ApiError {
  const header = response.headers.get('x-request-id') ?? undefined;
  const error = (body as EnvelopeBody | undefined)?.error;
  if (typeof error === 'string') return new ApiError(error, response.status, undefined, header);
  if (error && typeof error === 'object') {
    const message = typeof error.message === 'string' ? error.message : `HTTP ${response.status}`;
    const code = typeof error.code === 'string' ? error.code : undefined;
    const requestId = typeof error.request_id === 'string' ? error.request_id : header;
    return new ApiError(message, response.status, code, requestId, error.details);
  }
  return new ApiError(`HTTP ${response.status} ${response.statusText}`.trim(), response.status, undefined, header);
}

/** The outcome of a typed-client call (`openapi-fetch`): data on success, the parsed error body otherwise. */
export interface CallResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/**
 * The data of a typed-client call, or throws its `ApiError`. An answer with no body (204) yields `undefined`
 * typed as `T`, which callers of such routes ignore.
 */
export async function must<T>(call: Promise<CallResult<T>>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok || error !== undefined) throw apiError(error, response);
  return data as T;
}

/** What a notice shows for any thrown value: a message and, for API errors, the request id. */
export interface ErrorText {
  message: string;
  requestId?: string;
  code?: string;
}

/** Reduces anything thrown to the text of a notice. */
export function describeError(error: unknown): ErrorText {
  if (error instanceof ApiError) {
    const text: ErrorText = { message: error.message };
    if (error.requestId) text.requestId = error.requestId;
    if (error.code) text.code = error.code;
    return text;
  }
  if (error instanceof Error) return { message: error.message };
  return { message: String(error) };
}
