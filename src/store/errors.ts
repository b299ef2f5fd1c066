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

/**
 * Start-up refused: another live gateway holds this SQLite data dir (one
 * process per SQLite database, DECISIONS §11). The message names the holder
 * as far as it is known and PostgreSQL as the way to run several.
 */
export class DataDirTakenError extends Error {
  constructor(dataDir: string, holder: string) {
    super(
      `data dir ${dataDir} is in use by ${holder}: SQLite serves one gateway per data dir. Stop that one, give ` +
        'this one its own data_dir, or run several gateways on PostgreSQL (storage.driver: postgres)',
    );
    this.name = 'DataDirTakenError';
  }
}

/** Start-up refused: another live process runs under the same instance id on the shared database. */
export class InstanceTakenError extends Error {
  /** `holder`: `another gateway (pid N)` or `another process`; `host`: where it runs, when known. */
  constructor(id: string, holder: string, host: string | null = null) {
    super(
      `${holder} runs as instance ${id}${host ? ` on ${host}` : ''}: stop it, or give this one its own ` +
        'cluster.instance_id, gateway.port or data_dir',
    );
    this.name = 'InstanceTakenError';
  }
}
