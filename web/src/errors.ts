/**
 * Errors as the dashboard shows them: the API's envelope (`{error: {code, message, details, request_id}}`,
 * DECISIONS §3) becomes an `ApiError` carrying the message, the code and the request id, so every notice can
 * name the request an operator would look up in the logs. An answer that says when to come back (429 and
 * some 503s: `Retry-After`, `details.retry_after_seconds`) carries that wait too: the notice reads
 * "retry in N s" and a read loaded with `useLoad` (web/src/ui.tsx) runs again by itself once it has passed.
 */

/** An error answer of the API. `requestId` comes from the envelope or, failing that, the `X-Request-Id` header. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | undefined,
    readonly requestId: string | undefined,
    readonly details: unknown = undefined,
    /** Whole seconds the API asked to wait before trying again (`Retry-After`); undefined when it named none. */
    readonly retryAfterSeconds: number | undefined = undefined,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** A count of seconds when `value` is one (a number, or digits as the `Retry-After` header writes them). */
function seconds(value: unknown): number | undefined {
  const n = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value;
  return typeof n === 'number' && Number.isFinite(n) && n >= 0 ? Math.ceil(n) : undefined;
}

/** The wait an error answer names: `Retry-After`, else `details.retry_after_seconds`. */
function retryAfterOf(response: Response, details: unknown): number | undefined {
  const header = seconds(response.headers.get('retry-after') ?? undefined);
  if (header !== undefined) return header;
  return details && typeof details === 'object'
    ? seconds((details as { retry_after_seconds?: unknown }).retry_after_seconds)
    : undefined;
}

/**
 * How long to wait before loading again after `error`, in ms: the wait the API named (a 429 or 503 with
 * `Retry-After`), plus a little so the new window has surely begun; undefined when it named none (no retry).
 */
export function retryDelayMs(error: unknown): number | undefined {
  if (!(error instanceof ApiError) || error.retryAfterSeconds === undefined) return undefined;
  return error.retryAfterSeconds * 1000 + 250;
}

interface EnvelopeBody {
  error?: { code?: unknown; message?: unknown; request_id?: unknown; details?: unknown } | string;
}

/** Builds the `ApiError` of an error answer from its parsed body (any shape) and the response. */
export function apiError(body: unknown, response: Response): ApiError {
  const header = response.headers.get('x-request-id') ?? undefined;
  const error = (body as EnvelopeBody | undefined)?.error;
  if (typeof error === 'string') {
    return new ApiError(error, response.status, undefined, header, undefined, retryAfterOf(response, undefined));
  }
  if (error && typeof error === 'object') {
    const message = typeof error.message === 'string' ? error.message : `HTTP ${response.status}`;
    const code = typeof error.code === 'string' ? error.code : undefined;
    const requestId = typeof error.request_id === 'string' ? error.request_id : header;
    const retry = retryAfterOf(response, error.details);
    return new ApiError(message, response.status, code, requestId, error.details, retry);
  }
  const text = `HTTP ${response.status} ${response.statusText}`.trim();
  return new ApiError(text, response.status, undefined, header, undefined, retryAfterOf(response, undefined));
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
    // The wait is part of the message, so every notice (inline or toast) says when it will pass.
    const wait = error.retryAfterSeconds;
    const text: ErrorText = { message: wait === undefined ? error.message : `${error.message} — retry in ${wait} s` };
    if (error.requestId) text.requestId = error.requestId;
    if (error.code) text.code = error.code;
    return text;
  }
  if (error instanceof Error) return { message: error.message };
  return { message: String(error) };
}
