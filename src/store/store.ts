import { type Dialect, Kysely, sql, type Transaction } from 'kysely';
import { type Clock, isoTime, systemClock } from '../lib/clock.js';
import type { StoreAdapter } from './adapter.js';
import type { Database } from './database.js';
import { StoreUnavailableError, errorMessage } from './errors.js';
import type { FullTextDialect } from './fulltext.js';
import { GroupCommit, type GroupCommitOptions, type WriteOp } from './group-commit.js';
import { closeGuardedDialect, observeStatements, shareStatementTap } from './guarded-dialect.js';
import { faultDialect, type StoreFaults } from './store-faults.js';
import { setMeta } from './meta.repo.js';
import { migrate } from './migrate.js';
import { postgresAdapter } from './postgres/adapter.js';
import { createPostgresDialect, ensurePostgresSchema } from './postgres/dialect.js';
import { migrations as postgresMigrations } from './postgres/migrations.js';
import { sqliteAdapter } from './sqlite/adapter.js';
import { createSqliteDialect, sqliteWalPath } from './sqlite/dialect.js';
import { DurabilityBarrier, DurableFile } from './durability.js';
import { migrations as sqliteMigrations } from './sqlite/migrations.js';

export { StoreUnavailableError } from './errors.js';

/** Which database backs the store (config `storage.driver`). */
export type StoreDriver = 'sqlite' | 'postgres';

/** Where the data lives and how to reach it. */
export interface StoreOptions {
  driver: StoreDriver;
  /** SQLite: the directory holding `gatehouse.db`, created (recursively) when missing. */
  dataDir: string;
  /** PostgreSQL: `postgres://` URL (config `storage.url`); required for that driver, ignored by SQLite. */
  url?: string | null;
  /** PostgreSQL only: schema for every table (created when missing); default the server's (public). */
  schema?: string;
  /** PostgreSQL only: connection pool size; default 10. */
  poolSize?: number;
  /** Group-commit bounds; defaults in GroupCommitOptions. */
  writer?: GroupCommitOptions;
  /** Source of `schema_migrations.applied_at`; default the system clock. */
  clock?: Clock;
  /** Tests only: the fault seam that can make every query fail as in an outage (ADR 0014). */
  faults?: StoreFaults;
  /** PostgreSQL only: told when a pooled connection reports an error (a dropped backend); default: ignored. */
  onConnectionError?: (error: Error) => void;
}

/** Where a configuration keeps its data (`storage.driver`, `storage.url`, `data_dir`), as StoreOptions name it. */
export function storageOf(config: { data_dir: string; storage: { driver: StoreDriver; url: string | null } }): {
  driver: StoreDriver;
  dataDir: string;
  url: string | null;
} {
  return { driver: config.storage.driver, dataDir: config.data_dir, url: config.storage.url };
}

/** The database behind the gateway; repositories take `db` (or a transaction) as their executor. */
export interface Store {
  readonly driver: StoreDriver;
  /** For repositories: reads and writes that are not on the hot path. */
  readonly db: Kysely<Database>;
  /** Hot-path writes, batched into shared transactions. */
  readonly writer: GroupCommit;
  /**
   * Whether other gateway processes may share this database: true on
   * PostgreSQL, false on SQLite (one process per database file). When true,
   * work of other processes shows up only in the database (poll it), and a
   * process that dies leaves work behind for the live ones to recover.
   */
  readonly shared: boolean;
  /** Full-text indexing and ranking of `search_chunks` in this database's dialect (FTS5 or tsvector). */
  readonly fullText: FullTextDialect;
  /**
   * Runs `fn` in a write transaction serialised, under the lock `lockName`,
   * with every other `exclusive(lockName, …)` of every process sharing this
   * database, and resolves with its result once committed. Reads inside
   * `fn` see every commit of earlier holders, so a check-then-write (a
   * bounded claim) cannot act on a stale count.
   *
   * PostgreSQL: its own transaction holding a transaction-scoped advisory
   * lock keyed by `lockName` and the schema. SQLite: a `writer` op (SQLite
   * serialises writers), so, as for every `WriteOp`, `fn` must use only
   * `trx` and may run more than once. Rejects with `fn`'s error (rolled
   * back) or with StoreUnavailableError when the database is unreachable or
   * the store is closed.
   */
  exclusive<T>(lockName: string, fn: WriteOp<T>): Promise<T>;
  /**
   * Takes the lock `lockName` (as `exclusive` names them) inside `trx` if no
   * other transaction holds it, until `trx` ends; never waits. False when
   * another holds it. PostgreSQL: `pg_try_advisory_xact_lock`. SQLite: always
   * true (a write transaction already excludes every other).
   */
  tryLock(trx: Transaction<Database>, lockName: string): Promise<boolean>;
  /** Resolves when the database answers a trivial query; otherwise rejects with StoreUnavailableError within ~2 s. */
  ping(): Promise<void>;
  /**
   * Resolves when the database takes writes, as far as the writer knows: at
   * once while its last transaction committed; after the last one was refused
   * (a full disk answers `select 1` but refuses every commit), only once a
   * small probe write through the writer commits now. Otherwise rejects with
   * StoreUnavailableError within ~2 s. Costs nothing while writes succeed.
   */
  checkWrites(): Promise<void>;
  /**
   * Calls `observer` once per statement sent to the database (transaction control included), synchronously on
   * the hot path: it must only count (metrics). Replaces an earlier observer.
   */
  observeStatements(observer: () => void): void;
  /** Waits for queued writes to settle, then closes every connection. Idempotent. */
  close(): Promise<void>;
}

const PING_TIMEOUT_MS = 2000;
/** The gateway_meta row the write probe of `checkWrites` upserts. */
const WRITE_PROBE_KEY = 'write_probe';

/**
 * Builds a store without touching the schema: no migrations, and PostgreSQL
 * connects lazily. The gateway uses `openStore`; this serves probes and tests
 * that must not wait for a connection.
 *
 * Throws an Error naming `storage.url` when the PostgreSQL URL is missing or
 * malformed, and StoreUnavailableError when the SQLite file cannot be opened.
 */
export function createStore(options: StoreOptions): Store {
  switch (options.driver) {
    case 'sqlite': {
      const dialect = withFaults(createSqliteDialect(options.dataDir), options.faults);
      const wal = new DurableFile(sqliteWalPath(options.dataDir));
      const barrier = new DurabilityBarrier(() => wal.sync());
      return new KyselyStore(
        'sqlite',
        sqliteAdapter,
        new Kysely<Database>({ dialect }),
        dialect,
        { ...options, writer: { ...options.writer, durable: () => barrier.sync() } },
        () => wal.close(),
      );
    }
    case 'postgres': {
      const dialect = withFaults(
        createPostgresDialect({
          url: options.url,
          schema: options.schema,
          poolSize: options.poolSize,
          onConnectionError: options.onConnectionError,
        }),
        options.faults,
      );
      // A commit nothing waits on (streamed events, a waited message's acceptance) need not wait for the WAL flush.
      const relax = async (trx: Transaction<Database>): Promise<void> => {
        await sql`set local synchronous_commit = off`.execute(trx);
      };
      return new KyselyStore('postgres', postgresAdapter, new Kysely<Database>({ dialect }), dialect, {
        ...options,
        writer: { ...options.writer, relax },
      });
    }
    default: {
      const driver: never = options.driver;
      throw new Error(`storage.driver must be "sqlite" or "postgres", not ${JSON.stringify(driver)}`);
    }
  }
}

function withFaults(dialect: Dialect, faults: StoreFaults | undefined): Dialect {
  if (!faults) return dialect;
  const wrapped = faultDialect(dialect, faults);
  shareStatementTap(wrapped, dialect);
  return wrapped;
}

/**
 * Connects, creates the PostgreSQL schema when one is named, applies pending
 * migrations and returns the ready store. Safe to call from several processes
 * at once against the same database.
 *
 * Rejects with StoreUnavailableError when the database cannot be reached,
 * with an Error naming `storage.url` for a bad URL, and with the migration's
 * error when the schema cannot be brought up to date; nothing is left open.
 */
export async function openStore(options: StoreOptions): Promise<Store> {
  const store = createStore(options);
  const clock = options.clock ?? systemClock;
  try {
    if (options.driver === 'postgres' && options.schema !== undefined) {
      await ensurePostgresSchema(store.db, options.schema);
    }
    await migrate(store.db, {
      dialect: options.driver,
      migrations: options.driver === 'sqlite' ? sqliteMigrations : postgresMigrations,
      now: () => isoTime(clock.now()),
    });
  } catch (error) {
    await store.close().catch(() => undefined); // the first error is the one worth reporting
    throw error;
  }
  return store;
}

class KyselyStore implements Store {
  readonly writer: GroupCommit;
  readonly shared: boolean;
  readonly fullText: FullTextDialect;
  private readonly clock: Clock;
  #closing: Promise<void> | null = null;

  constructor(
    readonly driver: StoreDriver,
    private readonly adapter: StoreAdapter,
    readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    options: StoreOptions,
    /** Releases what the store holds besides its connections (the WAL descriptor), after the last commit. */
    private readonly release: () => Promise<void> = () => Promise.resolve(),
  ) {
    this.writer = new GroupCommit(db, options.writer);
    this.clock = options.clock ?? systemClock;
    this.shared = adapter.shared;
    this.fullText = adapter.fullText;
  }

  exclusive<T>(lockName: string, fn: WriteOp<T>): Promise<T> {
    return this.adapter.exclusive(this.db, this.writer, lockName, fn);
  }

  tryLock(trx: Transaction<Database>, lockName: string): Promise<boolean> {
    return this.adapter.tryLock(trx, lockName);
  }

  observeStatements(observer: () => void): void {
    observeStatements(this.dialect, observer);
  }

  ping(): Promise<void> {
    return this.#withinPingTimeout(sql`select 1`.execute(this.db));
  }

  checkWrites(): Promise<void> {
    if (!this.writer.writesFailing) return Promise.resolve();
    const now = isoTime(this.clock.now());
    return this.#withinPingTimeout(this.writer.run((trx) => setMeta(trx, WRITE_PROBE_KEY, now, now)));
  }

  async #withinPingTimeout(work: Promise<unknown>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new StoreUnavailableError(`database did not answer within ${PING_TIMEOUT_MS} ms`)),
        PING_TIMEOUT_MS,
      );
    });
    work.catch(() => undefined); // a late failure after the timeout is not unhandled
    try {
      await Promise.race([work, timeout]);
    } catch (error) {
      if (error instanceof StoreUnavailableError) throw error;
      throw new StoreUnavailableError(`database unavailable: ${errorMessage(error)}`, { cause: error });
    } finally {
      clearTimeout(timer);
    }
  }

  close(): Promise<void> {
    // Not `db.destroy()`: queries after close must fail as StoreUnavailableError (503), not a plain Error.
    this.#closing ??= this.writer
      .close()
      .then(() => closeGuardedDialect(this.dialect))
      .finally(() => this.release());
    return this.#closing;
  }
}
