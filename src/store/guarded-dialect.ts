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
  const guarded: Dialect = {
    createDriver: () => {
      const driver = new GuardedDriver(dialect.createDriver(), map);
      driversOf.get(guarded)?.push(driver);
      return driver;
    },
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createAdapter: () => {
      const adapter = dialect.createAdapter();
      wrapDirectLane(adapter, (inner) => ({
        run<R>(sql: string, parameters: readonly unknown[], inTransaction: boolean) {
          try {
            return inner.run<R>(sql, parameters, inTransaction);
          } catch (error) {
            throw map(error);
          }
        },
      }));
      return adapter;
    },
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
  driversOf.set(guarded, []);
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
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    try {
      return await this.inner.executeQuery<R>(query);
    } catch (error) {
      throw this.map(error);
    }
  }

  async *streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
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
      return new GuardedConnection(await this.inner.acquireConnection(), this.map);
    } catch (error) {
      throw toUnavailable(error);
    }
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.guard(() => this.inner.beginTransaction(unwrap(connection), settings));
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.guard(() => this.inner.commitTransaction(unwrap(connection)));
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.guard(() => this.inner.rollbackTransaction(unwrap(connection)));
  }

  savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return this.guard(() => this.savepointMethod('savepoint')(unwrap(connection), name, compile));
  }

  rollbackToSavepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
    return this.guard(() => this.savepointMethod('rollbackToSavepoint')(unwrap(connection), name, compile));
  }

  releaseSavepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
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

/**
 * What an injected fault refuses: `all` — every connection and query, as when
 * the database is unreachable; `writes` — every commit and every statement
 * that is not a `select` outside a transaction, while reads still answer, as
 * when SQLite's disk is full (`select 1` works, every commit fails);
 * `unacknowledged` — every write is applied, but its caller is told it failed,
 * as when a connection drops between the server's commit and its reply.
 */
export type StoreFaultMode = 'all' | 'writes' | 'unacknowledged';

/**
 * The store's fault seam, for tests: a store opened with `faults` fails, while
 * a fault is injected, exactly where a real outage fails it — with
 * StoreUnavailableError from the driver, below every repository, the
 * group-commit writer and the health probes. Healing restores it at once.
 */
export class StoreFaults {
  #mode: StoreFaultMode | null = null;
  #message = 'injected store fault';
  #match: RegExp | null = null;
  #refused = 0;

  /**
   * Starts failing (`mode`, default `all`) until `heal()`. With `match`, only
   * statements whose SQL matches fail (`all` mode), e.g. the reads of one table.
   */
  inject(mode: StoreFaultMode = 'all', options: { message?: string; match?: RegExp } = {}): void {
    this.#mode = mode;
    this.#message = options.message ?? 'injected store fault';
    this.#match = options.match ?? null;
  }

  /** Stops failing. */
  heal(): void {
    this.#mode = null;
  }

  /** The injected mode, or null when healthy. */
  get mode(): StoreFaultMode | null {
    return this.#mode;
  }

  /** Operations refused so far. */
  get refused(): number {
    return this.#refused;
  }

  /** Throws StoreUnavailableError when a fault refuses this step before it happens. */
  check(step: 'connect' | 'commit' | 'query', sql = '', inTransaction = false): void {
    const mode = this.#mode;
    if (mode === null || mode === 'unacknowledged') return;
    let refused: boolean;
    if (this.#match) refused = step === 'query' && this.#match.test(sql);
    else if (mode === 'all') refused = true;
    else refused = step === 'commit' || (step === 'query' && !inTransaction && !isRead(sql));
    if (refused) this.#fail();
  }

  /** Throws StoreUnavailableError when a fault hides the outcome of this step, which has happened. */
  checkAfter(step: 'commit' | 'query', sql = '', inTransaction = false): void {
    if (this.#mode !== 'unacknowledged') return;
    if (step === 'commit' || (!inTransaction && !isRead(sql))) this.#fail();
  }

  #fail(): never {
    this.#refused++;
    throw new StoreUnavailableError(`database unavailable: ${this.#message}`);
  }
}

function isRead(sql: string): boolean {
  return /^\s*select\b/i.test(sql);
}

/** Wraps a (guarded) dialect so that `faults` can fail it; closed through `closeGuardedDialect` like the inner one. */
export function faultDialect(dialect: Dialect, faults: StoreFaults): Dialect {
  const wrapped: Dialect = {
    createDriver: () => {
      const driver = new FaultDriver(dialect.createDriver(), faults);
      driversOf.get(wrapped)?.push(driver);
      return driver;
    },
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createAdapter: () => {
      const adapter = dialect.createAdapter();
      // The same checks as FaultDriver and FaultConnection make on Kysely's path.
      wrapDirectLane(adapter, (inner) => ({
        run<R>(sql: string, parameters: readonly unknown[], inTransaction: boolean) {
          if (!inTransaction) faults.check('connect');
          faults.check('query', sql, inTransaction);
          const result = inner.run<R>(sql, parameters, inTransaction);
          if (result) faults.checkAfter('query', sql, inTransaction);
          return result;
        },
      }));
      return adapter;
    },
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
  driversOf.set(wrapped, []);
  return wrapped;
}

class FaultConnection implements DatabaseConnection {
  inTransaction = false;

  constructor(
    readonly inner: DatabaseConnection,
    private readonly faults: StoreFaults,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    this.faults.check('query', query.sql, this.inTransaction);
    const result = await this.inner.executeQuery<R>(query);
    this.faults.checkAfter('query', query.sql, this.inTransaction);
    return result;
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    this.faults.check('query', query.sql, this.inTransaction);
    return this.inner.streamQuery<R>(query, chunkSize);
  }
}

function innerOf(connection: DatabaseConnection): DatabaseConnection {
  return connection instanceof FaultConnection ? connection.inner : connection;
}

class FaultDriver implements Driver {
  constructor(
    private readonly inner: Driver,
    private readonly faults: StoreFaults,
  ) {}

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    this.faults.check('connect');
    return new FaultConnection(await this.inner.acquireConnection(), this.faults);
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    await this.inner.beginTransaction(innerOf(connection), settings);
    if (connection instanceof FaultConnection) connection.inTransaction = true;
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    this.faults.check('commit');
    await this.inner.commitTransaction(innerOf(connection));
    if (connection instanceof FaultConnection) connection.inTransaction = false;
    this.faults.checkAfter('commit');
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    if (connection instanceof FaultConnection) connection.inTransaction = false;
    await this.inner.rollbackTransaction(innerOf(connection));
  }

  savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return this.inner.savepoint!(innerOf(connection), name, compile);
  }

  rollbackToSavepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
    return this.inner.rollbackToSavepoint!(innerOf(connection), name, compile);
  }

  releaseSavepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
    return this.inner.releaseSavepoint!(innerOf(connection), name, compile);
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    if (connection instanceof FaultConnection) connection.inTransaction = false;
    return this.inner.releaseConnection(innerOf(connection));
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}
