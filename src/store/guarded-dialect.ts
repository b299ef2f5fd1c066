import type {
  CompiledQuery,
  DatabaseConnection,
  Dialect,
  Driver,
  QueryCompiler,
  QueryResult,
  TransactionSettings,
} from 'kysely';
import { wrapDirectLane } from './direct-lane.js';
import { StoreUnavailableError, errorMessage } from './errors.js';

/** True when a driver error means the database cannot be reached or cannot write, not that the statement was wrong. */
export type UnavailableTest = (error: unknown) => boolean;

/** Drivers created from a guarded dialect, so the store can close them without Kysely's own destroy. */
const driversOf = new WeakMap<Dialect, Driver[]>();

/** Told of every statement a guarded dialect sends to the database (metrics); one per dialect, shared by its parts. */
interface StatementTap {
  onStatement: () => void;
}

const noop = (): void => undefined;

/** The tap of each guarded dialect (and of a dialect wrapping one, `shareStatementTap`). */
const tapsOf = new WeakMap<Dialect, StatementTap>();

/**
 * Calls `observer` once for every statement `dialect` (a guarded one) sends to the database, whichever way:
 * Kysely's connections, the direct lane, and transaction control (begin, commit, rollback, savepoints). It runs on
 * the hot path, synchronously: it must only count. Replaces an earlier observer; ignored for another dialect.
 */
export function observeStatements(dialect: Dialect, observer: () => void): void {
  const tap = tapsOf.get(dialect);
  if (tap) tap.onStatement = observer;
}

/** Lets `observeStatements(wrapper, …)` reach the statements of the guarded dialect `inner` it wraps (faults). */
export function shareStatementTap(wrapper: Dialect, inner: Dialect): void {
  const tap = tapsOf.get(inner);
  if (tap) tapsOf.set(wrapper, tap);
}

/**
 * Makes `dialect` one that `closeGuardedDialect` closes: from now on the
 * drivers passed to `trackDriver` for it are destroyed there. For a dialect
 * wrapping a guarded one (the tests' fault seam, store-faults.ts).
 */
export function registerGuardedDialect(dialect: Dialect): void {
  driversOf.set(dialect, []);
}

/** Remembers `driver`, created by `dialect`, for `closeGuardedDialect`; ignored for an unregistered dialect. */
export function trackDriver(dialect: Dialect, driver: Driver): void {
  driversOf.get(dialect)?.push(driver);
}

/**
 * Closes the connections of a guarded dialect. Unlike `Kysely.destroy()`,
 * later queries then fail with StoreUnavailableError ("store closed") — a
 * 503 for the caller — instead of Kysely's plain "driver destroyed" error.
 */
export async function closeGuardedDialect(dialect: Dialect): Promise<void> {
  for (const driver of driversOf.get(dialect) ?? []) await driver.destroy();
}

/**
 * Wraps a Kysely dialect so that every error meaning "the database is not
 * there" surfaces as StoreUnavailableError, whichever way the query was sent
 * (`db`, a transaction, the group-commit writer). Failing to obtain a
 * connection always counts; query errors count when `isUnavailable` says so.
 * Everything else passes through untouched.
 */
export function guardDialect(dialect: Dialect, isUnavailable: UnavailableTest): Dialect {
  const map = (error: unknown): unknown => (isUnavailable(error) ? toUnavailable(error) : error);
  const tap: StatementTap = { onStatement: noop };
  const guarded: Dialect = {
    createDriver: () => {
      const driver = new GuardedDriver(dialect.createDriver(), map, tap);
      trackDriver(guarded, driver);
      return driver;
    },
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createAdapter: () => {
      const adapter = dialect.createAdapter();
      wrapDirectLane(adapter, (inner) => ({
        run<R>(sql: string, parameters: readonly unknown[], inTransaction: boolean) {
          let result: QueryResult<R> | undefined;
          try {
            result = inner.run<R>(sql, parameters, inTransaction);
          } catch (error) {
            tap.onStatement(); // it ran, and failed
            throw map(error);
          }
          // Declined (undefined): it takes Kysely's path and is counted there.
          if (result) tap.onStatement();
          return result;
        },
      }));
      return adapter;
    },
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
  registerGuardedDialect(guarded);
  tapsOf.set(guarded, tap);
  return guarded;
}

function toUnavailable(error: unknown): StoreUnavailableError {
  if (error instanceof StoreUnavailableError) return error;
  return new StoreUnavailableError(`database unavailable: ${errorMessage(error)}`, { cause: error });
}

class GuardedConnection implements DatabaseConnection {
  constructor(
    readonly inner: DatabaseConnection,
    private readonly map: (error: unknown) => unknown,
    private readonly tap: StatementTap,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    this.tap.onStatement();
    try {
      return await this.inner.executeQuery<R>(query);
    } catch (error) {
      throw this.map(error);
    }
  }

  async *streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    this.tap.onStatement();
    try {
      yield* this.inner.streamQuery<R>(query, chunkSize);
    } catch (error) {
      throw this.map(error);
    }
  }
}

function unwrap(connection: DatabaseConnection): DatabaseConnection {
  return connection instanceof GuardedConnection ? connection.inner : connection;
}

class GuardedDriver implements Driver {
  private closed = false;
  private destroying: Promise<void> | undefined;

  /** `map` turns a driver error into StoreUnavailableError when it means the database is not there. */
  constructor(
    private readonly inner: Driver,
    private readonly map: (error: unknown) => unknown,
    private readonly tap: StatementTap,
  ) {}

  private async guard<T>(action: () => Promise<T>): Promise<T> {
    try {
      return await action();
    } catch (error) {
      throw this.map(error);
    }
  }

  init(): Promise<void> {
    return this.guard(() => this.inner.init());
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    if (this.closed) throw new StoreUnavailableError('store closed');
    try {
      return new GuardedConnection(await this.inner.acquireConnection(), this.map, this.tap);
    } catch (error) {
      throw toUnavailable(error);
    }
  }

  // Transaction control runs on the unwrapped connection (one statement each), so it is counted here.
  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    this.tap.onStatement();
    return this.guard(() => this.inner.beginTransaction(unwrap(connection), settings));
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    this.tap.onStatement();
    return this.guard(() => this.inner.commitTransaction(unwrap(connection)));
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    this.tap.onStatement();
    return this.guard(() => this.inner.rollbackTransaction(unwrap(connection)));
  }

  savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    this.tap.onStatement();
    return this.guard(() => this.savepointMethod('savepoint')(unwrap(connection), name, compile));
  }

  rollbackToSavepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
    this.tap.onStatement();
    return this.guard(() => this.savepointMethod('rollbackToSavepoint')(unwrap(connection), name, compile));
  }

  releaseSavepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
    this.tap.onStatement();
    return this.guard(() => this.savepointMethod('releaseSavepoint')(unwrap(connection), name, compile));
  }

  private savepointMethod<K extends 'savepoint' | 'rollbackToSavepoint' | 'releaseSavepoint'>(
    name: K,
  ): NonNullable<Driver[K]> {
    const method = this.inner[name];
    if (!method) throw new Error('this database driver does not support savepoints');
    return method.bind(this.inner);
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection(unwrap(connection));
  }

  destroy(): Promise<void> {
    this.destroying ??= (async () => {
      this.closed = true;
      await this.inner.destroy();
    })();
    return this.destroying;
  }
}
