/**
 * The database cannot be reached or cannot take writes right now (connection
 * refused or lost, pool exhausted, disk full, lock timeout, store closed,
 * write queue full). Callers answer it as 503 UNAVAILABLE; the request may be
 * retried. Errors that are the statement's fault (constraint violations,
 * syntax) are not wrapped and keep their driver error.
 */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

/** The message of anything thrown, for wrapping without losing it. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
