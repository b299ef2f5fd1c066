/**
 * The one error type every model provider throws. Its message is short and
 * stable (the provider's name and what went wrong: `openai: HTTP 500`,
 * `anthropic: timed out …`), meant for the `UPSTREAM_ERROR` envelope and
 * health; it never carries the upstream's own text, the api key, request
 * headers or anything that looks like a credential. The upstream's text, with
 * secrets redacted, travels apart in `detail`, for the log only.
 */

/** What went wrong, coarsely: enough for the agent loop to pick a turn status and for an operator to act. */
export type ProviderErrorKind = 'timeout' | 'http' | 'network' | 'aborted' | 'invalid_response';

/**
 * A failed model call. `status` is the HTTP status for `kind: 'http'`;
 * `code` the low-level cause of a `network` failure (`ECONNREFUSED`…) when known.
 */
export class ProviderError extends Error {
  constructor(
    message: string,
    readonly kind: ProviderErrorKind,
    readonly status?: number,
    readonly code?: string,
    /** The upstream's own error text, secrets redacted and truncated: for the log, never for a client. */
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'ProviderError';
  }

  /** The message and, when there is one, the upstream's redacted text: for log lines and the local doctor only. */
  get logText(): string {
    return this.detail ? `${this.message}: ${this.detail}` : this.message;
  }

  /**
   * The cause in a word or two, for log fields and health: the network code
   * (`ECONNREFUSED`, `ENOTFOUND`…), `HTTP 401`, `timeout`, `aborted`,
   * `invalid response`. Never holds server text.
   */
  get reason(): string {
    switch (this.kind) {
      case 'network':
        return this.code ?? 'network error';
      case 'http':
        return this.status !== undefined ? `HTTP ${this.status}` : 'error in stream';
      case 'timeout':
        return 'timeout';
      case 'aborted':
        return 'aborted';
      case 'invalid_response':
        return 'invalid response';
    }
  }
}

const MAX_DETAIL_CHARS = 200;

/** Credential-shaped substrings scrubbed from any server-supplied text, whatever the configured key is. */
const CREDENTIAL_PATTERNS: RegExp[] = [
  /\b(?:sk|pk|rk)-[A-Za-z0-9_*.-]{4,}/g,
  /\bBearer\s+\S+/gi,
  /\b(?:x-api-key|api[_-]?key|authorization)\s*[:=]\s*\S+/gi,
];

/**
 * Removes every occurrence of the given secrets and anything credential-shaped
 * from `text`, collapses whitespace and truncates it to a log-friendly length.
 */
export function redactSecrets(text: string, secrets: ReadonlyArray<string | null | undefined>): string {
  let out = text;
  for (const secret of secrets) {
    if (secret && secret.length >= 4) out = out.split(secret).join('***');
  }
  for (const pattern of CREDENTIAL_PATTERNS) out = out.replace(pattern, '***');
  out = out.replace(/\s+/g, ' ').trim();
  return out.length > MAX_DETAIL_CHARS ? `${out.slice(0, MAX_DETAIL_CHARS)}…` : out;
}

/**
 * Finds the human message in an error body as the OpenAI (`{message}` or
 * `{error: {message}}`) and Anthropic (`{type: 'error', error: {message}}`)
 * APIs send it. Returns null when there is none.
 */
export function serverErrorMessage(body: unknown): string | null {
  if (typeof body === 'string') return body || null;
  if (!isRecord(body)) return null;
  if (typeof body.message === 'string' && body.message) return body.message;
  if (isRecord(body.error) && typeof body.error.message === 'string' && body.error.message) return body.error.message;
  return null;
}

/** The human message of an upstream error body, secrets redacted (`redactSecrets`); undefined when it has none. */
export function upstreamDetail(body: unknown, secrets: ReadonlyArray<string | null | undefined>): string | undefined {
  const detail = serverErrorMessage(body);
  return detail ? redactSecrets(detail, secrets) || undefined : undefined;
}

/** Narrowing helper for parsed JSON. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The low-level cause code of a connection failure (`ECONNREFUSED`,
 * `ENOTFOUND`, `UND_ERR_SOCKET`…), searched along the `cause` chain.
 */
export function networkCode(err: unknown): string | null {
  let current: unknown = err;
  for (let depth = 0; depth < 6; depth++) {
    if (typeof current !== 'object' || current === null) return null;
    const { code, cause } = current as { code?: unknown; cause?: unknown };
    if (typeof code === 'string' && /^[A-Z][A-Z0-9_]+$/.test(code)) return code;
    current = cause;
  }
  return null;
}

/** The error classes an official SDK throws (both SDKs share this hierarchy). */
export interface SdkErrorClasses {
  APIError: abstract new (...args: never[]) => Error & { status?: number | undefined; error?: unknown };
  APIConnectionError: abstract new (...args: never[]) => Error;
  APIConnectionTimeoutError: abstract new (...args: never[]) => Error;
  APIUserAbortError: abstract new (...args: never[]) => Error;
}

/**
 * Maps anything an SDK call threw to a ProviderError with a short message
 * that never carries the api key (`secrets` are redacted from server text).
 * `stopped` builds the timeout/abort errors; `stoppedBy` is the guard's verdict.
 */
export function sdkErrorToProviderError(
  err: unknown,
  options: {
    label: string;
    classes: SdkErrorClasses;
    secrets: readonly string[];
    stoppedBy: 'timeout' | 'aborted' | null;
    stopped: (why: 'timeout' | 'aborted') => ProviderError;
  },
): ProviderError {
  const { label, classes } = options;
  if (err instanceof ProviderError) return err;
  if (options.stoppedBy) return options.stopped(options.stoppedBy);
  if (err instanceof classes.APIConnectionTimeoutError) return options.stopped('timeout');
  if (err instanceof classes.APIUserAbortError) return options.stopped('aborted');
  if (err instanceof classes.APIConnectionError) {
    const code = networkCode(err);
    return new ProviderError(
      `${label}: cannot reach the server${code ? ` (${code})` : ''}`,
      'network',
      undefined,
      code ?? undefined,
    );
  }
  if (err instanceof classes.APIError) {
    const detail = upstreamDetail(err.error, options.secrets);
    if (typeof err.status === 'number') {
      return new ProviderError(`${label}: HTTP ${err.status}`, 'http', err.status, undefined, detail);
    }
    // An error event inside an otherwise successful stream (e.g. overloaded_error).
    return new ProviderError(`${label}: error in stream`, 'http', undefined, undefined, detail);
  }
  if (err instanceof SyntaxError) {
    return new ProviderError(`${label}: malformed stream (invalid JSON)`, 'invalid_response');
  }
  const code = networkCode(err);
  if (code) return new ProviderError(`${label}: connection failed (${code})`, 'network', undefined, code);
  return new ProviderError(`${label}: unexpected response from the server`, 'invalid_response');
}
