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
  rateLimited: (retryAfterSeconds: number, details?: ErrorDetails) =>
    new ApiError('RATE_LIMITED', 'too many requests', details ?? { retry_after_seconds: retryAfterSeconds }, {
      'retry-after': String(retryAfterSeconds),
    }),
  internal: () => new ApiError('INTERNAL_ERROR', 'internal error'),
  upstream: (message = 'model provider failed', details?: ErrorDetails) =>
    new ApiError('UPSTREAM_ERROR', message, details),
  unavailable: (message = 'service unavailable') => new ApiError('UNAVAILABLE', message),
  timeout: (message = 'timed out waiting for the result', details?: ErrorDetails) =>
    new ApiError('TIMEOUT', message, details),
};

/** The envelope body for an ApiError. */
export function errorEnvelope(error: ApiError, requestId: string): { error: Record<string, unknown> } {
  return {
    error: { code: error.code, message: error.message, details: error.details, request_id: requestId },
  };
}
