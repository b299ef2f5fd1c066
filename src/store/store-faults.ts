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
import { StoreUnavailableError } from './errors.js';
import { registerGuardedDialect, trackDriver } from './guarded-dialect.js';

/**
 * The store's fault seam, a test seam (ADR 0014): `StoreFaults`, handed to
 * `openStore({faults})` (or `createGateway({storeFaults})` in process), and
 * `faultDialect`, which wraps the guarded dialect so that queries fail while
 * a fault is injected, as they do in a real outage — an unreachable database,
 * a full disk, a connection lost after COMMIT. Production never opens a store
 * with `faults`: no wrapper, no cost. The error mapping itself is in
 * guarded-dialect.ts.
 */

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
      trackDriver(wrapped, driver);
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
  registerGuardedDialect(wrapped);
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
