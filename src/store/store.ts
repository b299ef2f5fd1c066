import { type Dialect, Kysely, sql } from 'kysely';
import { type Clock, isoTime, systemClock } from '../lib/clock.js';
import type { StoreAdapter } from './adapter.js';
import type { Database } from './database.js';
import { StoreUnavailableError, errorMessage } from './errors.js';
import type { FullTextDialect } from './fulltext.js';
import { GroupCommit, type GroupCommitOptions, type WriteOp } from './group-commit.js';
import { closeGuardedDialect } from './guarded-dialect.js';
import { migrate } from './migrate.js';
import { postgresAdapter } from './postgres/adapter.js';
import { createPostgresDialect, ensurePostgresSchema } from './postgres/dialect.js';
import { migrations as postgresMigrations } from './postgres/migrations.js';
import { sqliteAdapter } from './sqlite/adapter.js';
import { createSqliteDialect, sqliteWalPath } from './sqlite/dialect.js';
import { DurabilityBarrier, fsyncPath } from './durability.js';
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
  /** Resolves when the database answers a trivial query; otherwise rejects with StoreUnavailableError within ~2 s. */
  ping(): Promise<void>;
  /** Waits for queued writes to settle, then closes every connection. Idempotent. */
  close(): Promise<void>;
}

const PING_TIMEOUT_MS = 2000;

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
      const dialect = createSqliteDialect(options.dataDir);
      const wal = sqliteWalPath(options.dataDir);
      const barrier = new DurabilityBarrier(() => fsyncPath(wal));
      return new KyselyStore('sqlite', sqliteAdapter, new Kysely<Database>({ dialect }), dialect, {
        ...options,
        writer: { ...options.writer, durable: () => barrier.sync() },
      });
    }
    case 'postgres': {
      const dialect = createPostgresDialect({ url: options.url, schema: options.schema, poolSize: options.poolSize });
      return new KyselyStore('postgres', postgresAdapter, new Kysely<Database>({ dialect }), dialect, options);
    }
    default: {
      const driver: never = options.driver;
      throw new Error(`storage.driver must be "sqlite" or "postgres", not ${JSON.stringify(driver)}`);
    }
  }
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
  #closing: Promise<void> | null = null;

  constructor(
    readonly driver: StoreDriver,
    private readonly adapter: StoreAdapter,
    readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    options: StoreOptions,
  ) {
    this.writer = new GroupCommit(db, options.writer);
    this.shared = adapter.shared;
    this.fullText = adapter.fullText;
  }

  exclusive<T>(lockName: string, fn: WriteOp<T>): Promise<T> {
    return this.adapter.exclusive(this.db, this.writer, lockName, fn);
  }

  async ping(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new StoreUnavailableError(`database did not answer within ${PING_TIMEOUT_MS} ms`)),
        PING_TIMEOUT_MS,
      );
    });
    try {
      await Promise.race([sql`select 1`.execute(this.db), timeout]);
    } catch (error) {
      if (error instanceof StoreUnavailableError) throw error;
      throw new StoreUnavailableError(`database unavailable: ${errorMessage(error)}`, { cause: error });
    } finally {
      clearTimeout(timer);
    }
  }

  close(): Promise<void> {
    // Not `db.destroy()`: queries after close must fail as StoreUnavailableError (503), not a plain Error.
    this.#closing ??= this.writer.close().then(() => closeGuardedDialect(this.dialect));
    return this.#closing;
  }
}
