import { StoreUnavailableError } from '../store/index.js';

/**
 * The closed set of error codes (DECISIONS §3) and the one error type every
 * layer throws. The error handler in `server.ts` turns it into the envelope
 * `{"error": {code, message, details, request_id}}`.
 */
export const ERROR_STATUS = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  UPSTREAM_ERROR: 502,
  UNAVAILABLE: 503,
  TIMEOUT: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** A validation problem at a field path. */
export interface FieldIssue {
  path: string;
  message: string;
}

export type ErrorDetails = Record<string, unknown> | FieldIssue[];

/** An error that is safe to show the client: its message and details go on the wire. */
export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetails = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = ERROR_STATUS[code];
  }
}

/**
 * The idempotency conflict (spec rule 4): 409 with the body
 * `{"error": "<message>"}` exactly, the one exception to the envelope.
 */
export class IdempotencyConflictError extends Error {
  readonly status = 409;
  constructor(message = 'idempotency key reused with different content') {
    super(message);
    this.name = 'IdempotencyConflictError';
  }
}

/**
 * Seconds a client is told to wait when the store cannot be reached (503): about the store's own connect
 * timeout (2 s for PostgreSQL), so a retry is not sent before the outage could have been noticed to end.
 */
export const STORE_UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/**
 * The one way a retry hint is written: the `Retry-After` header and `details.retry_after_seconds` (whole
 * seconds, at least 1), for the REST and webhook answers and the WebSocket's error frames alike.
 */
function retryLater(code: ErrorCode, message: string, seconds: number, details: Record<string, unknown>): ApiError {
  const retryAfter = Math.max(1, Math.ceil(seconds));
  return new ApiError(
    code,
    message,
    { ...details, retry_after_seconds: retryAfter },
    { 'retry-after': String(retryAfter) },
  );
}

/** Factories, so call sites read as what happened. */
export const errors = {
  badRequest: (message: string, details?: ErrorDetails) => new ApiError('BAD_REQUEST', message, details),
  validation: (issues: FieldIssue[], message = 'request validation failed') =>
    new ApiError('BAD_REQUEST', message, issues),
  unauthorized: (message = 'missing or invalid token') => new ApiError('UNAUTHORIZED', message),
  forbidden: (message = 'forbidden') => new ApiError('FORBIDDEN', message),
  crossSite: () => new ApiError('FORBIDDEN', 'cross-site request forbidden'),
  notFound: (what = 'resource') => new ApiError('NOT_FOUND', `${what} not found`),
  payloadTooLarge: (limit: number) =>
    new ApiError('PAYLOAD_TOO_LARGE', `request body exceeds ${limit} bytes`, { max_bytes: limit }),
  /**
   * 429 with `Retry-After` and `details.retry_after_seconds` (the same number, so the WebSocket's error frame,
   * which has no headers, tells it too) beside any other `details`.
   */
  rateLimited: (retryAfterSeconds: number, details: Record<string, unknown> = {}) =>
    retryLater('RATE_LIMITED', 'too many requests', retryAfterSeconds, details),
  internal: () => new ApiError('INTERNAL_ERROR', 'internal error'),
  upstream: (message = 'model provider failed', details?: ErrorDetails) =>
    new ApiError('UPSTREAM_ERROR', message, details),
  /** 503 with no retry hint (draining: this process takes nothing more); `unavailableFor` when a wait is known. */
  unavailable: (message = 'service unavailable') => new ApiError('UNAVAILABLE', message),
  /** 503 for a condition expected to pass: `Retry-After` and `details.retry_after_seconds`, as `rateLimited`. */
  unavailableFor: (retryAfterSeconds: number, message: string, details: Record<string, unknown> = {}) =>
    retryLater('UNAVAILABLE', message, retryAfterSeconds, details),
  timeout: (message = 'timed out waiting for the result', details?: ErrorDetails) =>
    new ApiError('TIMEOUT', message, details),
};

/** The envelope body for an ApiError. */
export function errorEnvelope(error: ApiError, requestId: string): { error: Record<string, unknown> } {
  return {
    error: { code: error.code, message: error.message, details: error.details, request_id: requestId },
  };
}

/**
 * What any thrown value means for the client, decided once for the API,
 * the webhook server and the WebSocket (DECISIONS §3): the ApiError to
 * answer with, whether it is the idempotency conflict (spec rule 4: its own
 * body), and how to log it — client errors not at all, a store outage as a
 * warning (spec: 503 when durable storage is unavailable), anything
 * unexpected as an error with its cause (answered with a generic 500).
 */
export interface ClassifiedError {
  error: ApiError;
  conflict: boolean;
  log: 'none' | 'warn' | 'error';
}

/**
 * Classifies a thrown value (see `ClassifiedError`). Framework errors carry
 * a `statusCode`: 413 is PAYLOAD_TOO_LARGE (`maxBodyBytes` in the details
 * when known), other 4xx are 400 BAD_REQUEST.
 */
export function classifyError(err: unknown, options: { maxBodyBytes?: number } = {}): ClassifiedError {
  if (err instanceof ApiError) return { error: err, conflict: false, log: 'none' };
  if (err instanceof IdempotencyConflictError) {
    return { error: new ApiError('CONFLICT', err.message), conflict: true, log: 'none' };
  }
  if (err instanceof StoreUnavailableError) {
    const error = errors.unavailableFor(STORE_UNAVAILABLE_RETRY_AFTER_SECONDS, 'storage unavailable', {
      reason: 'store_unavailable',
    });
    return { error, conflict: false, log: 'warn' };
  }
  const framework = (err ?? {}) as { statusCode?: unknown; code?: unknown };
  const status = typeof framework.statusCode === 'number' ? framework.statusCode : 500;
  if (status === 413) {
    const error =
      options.maxBodyBytes !== undefined
        ? errors.payloadTooLarge(options.maxBodyBytes)
        : new ApiError('PAYLOAD_TOO_LARGE', 'request body too large');
    return { error, conflict: false, log: 'none' };
  }
  if (status >= 400 && status < 500) {
    const message =
      framework.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? 'Content-Type must be application/json' : 'bad request';
    return { error: errors.badRequest(message), conflict: false, log: 'none' };
  }
  return { error: errors.internal(), conflict: false, log: 'error' };
}

/** A response for the HTTP servers (API and webhook): status, body and headers. */
export interface ErrorResponse {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

/**
 * The HTTP answer for anything thrown: the envelope with the request id, or
 * the conflict's `{"error": message}` (spec rule 4 — the one body outside
 * the envelope). Logs as `classifyError` says, never the cause to the client.
 */
export function errorResponse(
  err: unknown,
  requestId: string,
  logger: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void },
  options: {
    maxBodyBytes?: number;
    /** The route's own error body (RouteDef `errorBody`), instead of the envelope and the conflict's body. */
    body?: (error: ApiError, info: { requestId: string; conflict: boolean }) => unknown;
  } = {},
): ErrorResponse {
  const { error, conflict, log } = classifyError(err, options);
  if (log === 'warn') logger.warn({ err: (err as Error).message, request_id: requestId }, 'store unavailable');
  if (log === 'error') logger.error({ err, request_id: requestId }, 'unhandled error');
  if (options.body)
    return { status: error.status, body: options.body(error, { requestId, conflict }), headers: error.headers };
  if (conflict) return { status: 409, body: { error: error.message }, headers: {} };
  return { status: error.status, body: errorEnvelope(error, requestId), headers: error.headers };
}
