import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type DialectAdapter,
  type QueryResult,
  SqliteDialect,
  SqliteDriver,
  type SqliteDatabase,
  type SqliteStatement,
} from 'kysely';
import { ensurePrivateDirSync, tightenPrivateFileSync, touchPrivateFileSync } from '../../lib/private-files.js';
import { StoreUnavailableError, errorMessage } from '../errors.js';
import { setDirectLane, type DirectLane } from '../direct-lane.js';
import { guardDialect } from '../guarded-dialect.js';

/** File name of the database inside the data directory. */
export const SQLITE_FILE = 'gatehouse.db';

/** Path of the WAL file of the database in `dataDir` (fsynced by the writer's durability barrier). */
export function sqliteWalPath(dataDir: string): string {
  return join(dataDir, `${SQLITE_FILE}-wal`);
}

/**
 * WAL pages after which a commit checkpoints (SQLite's default is 1000). A
 * turn writes about 37 pages of WAL in its three commits, so at 1000 a
 * checkpoint ran every 27 turns, on the event loop, with two blocking fsyncs.
 * At 4000 (a WAL of up to 16 MB) it runs a quarter as often and copies half
 * the pages to the database per turn, since the hot pages (the tails of the
 * ledger's indexes, the sessions) are copied once per checkpoint however often
 * they changed in between.
 */
const WAL_AUTOCHECKPOINT_PAGES = 4000;

/**
 * Bytes the WAL is cut back to whenever a checkpoint lets it start over
 * (`journal_size_limit`). Without it the WAL file keeps its peak size for
 * good: 16 MB in steady state, more after a checkpoint was held back, which
 * on a small disk stayed taken after a disk-full episode and filled the disk
 * again by itself. Cost: the file grows back past this limit once per
 * checkpoint cycle (ADR 0035 has the bench figures).
 */
export const WAL_SIZE_LIMIT_BYTES = 4 * 1024 * 1024;

/**
 * Opens (creating when missing) `<dataDir>/gatehouse.db` with WAL,
 * synchronous=NORMAL, busy_timeout=5000, foreign_keys=ON, a checkpoint every
 * 4000 WAL pages, the WAL cut back to 4 MB after each. The directory is
 * 0700 and the database 0600 (SQLite gives the WAL and shared-memory files
 * the database's mode); wider modes left by an older install are tightened.
 *
 * NORMAL means a commit writes the WAL without syncing it; the store's
 * writer then fsyncs the WAL off the event loop (DurabilityBarrier) before it
 * acknowledges a batch, so acknowledged writes are as durable as with FULL
 * while a blocking fsync never stalls request handling (ADR 0004).
 *
 * Transactions start with BEGIN IMMEDIATE so a second process waits for the
 * write lock (busy_timeout) instead of failing mid-transaction on a lock
 * upgrade. Throws StoreUnavailableError when the directory or file cannot be
 * created or opened.
 */
export function createSqliteDialect(dataDir: string): Dialect {
  const path = join(dataDir, SQLITE_FILE);
  let database: BetterSqlite3.Database | undefined;
  try {
    ensurePrivateDirSync(dataDir);
    touchPrivateFileSync(path);
    database = new BetterSqlite3(path);
    database.pragma('busy_timeout = 5000');
    const mode = database.pragma('journal_mode = WAL', { simple: true });
    if (mode !== 'wal') throw new Error(`journal_mode is ${String(mode)}, WAL unsupported here`);
    for (const suffix of ['-wal', '-shm']) tightenPrivateFileSync(`${path}${suffix}`);
    database.pragma('synchronous = NORMAL');
    database.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
    database.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
    database.pragma('foreign_keys = ON');
  } catch (error) {
    database?.close();
    throw new StoreUnavailableError(`cannot open SQLite database at ${path}: ${errorMessage(error)}`, {
      cause: error,
    });
  }
  return guardDialect(new StoreSqliteDialect(database), isSqliteUnavailable);
}

const UNAVAILABLE_CODES = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|CANTOPEN|READONLY|CORRUPT|NOTADB|PROTOCOL|NOMEM)/;

/** Lock timeouts, I/O and disk-full errors, and use after close; not constraint or syntax errors. */
export function isSqliteUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && UNAVAILABLE_CODES.test(code)) return true;
  return error.message === 'The database connection is not open';
}

/** Prepared statements kept per SQL text (Kysely would prepare every query anew). */
const STATEMENT_CACHE_SIZE = 512;

/**
 * The database as Kysely sees it, with a bounded LRU of prepared statements:
 * the hot path runs the same few dozen statements, and preparing each one on
 * every query was a tenth of the gateway's CPU.
 */
function withStatementCache(database: BetterSqlite3.Database): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => database.close(),
    prepare(sql: string): SqliteStatement {
      let statement = cache.get(sql);
      if (statement) {
        cache.delete(sql);
      } else {
        statement = database.prepare(sql);
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
      }
      cache.set(sql, statement);
      return statement;
    },
  };
}

/**
 * Runs a statement at once on the one connection (see `DirectLane`): only
 * while it is open, and only inside a transaction when one is open — the
 * single connection's transaction is the caller's own, since Kysely lends
 * the connection to one transaction at a time — or outside one when none is.
 * The same statement cache and result shape as Kysely's SQLite driver.
 */
class SqliteDirectLane implements DirectLane {
  constructor(
    private readonly database: BetterSqlite3.Database,
    private readonly statements: SqliteDatabase,
  ) {}

  run<R>(sql: string, parameters: readonly unknown[], inTransaction: boolean): QueryResult<R> | undefined {
    const database = this.database;
    if (!database.open || database.inTransaction !== inTransaction) return undefined;
    const statement = this.statements.prepare(sql);
    if (statement.reader) return { rows: statement.all(parameters) as R[] };
    const { changes, lastInsertRowid } = statement.run(parameters);
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
  }
}

class StoreSqliteDriver extends SqliteDriver {
  constructor(
    private readonly database: BetterSqlite3.Database,
    statements: SqliteDatabase,
  ) {
    super({ database: statements });
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }

  // SQLite rolls back on its own after some errors (SQLITE_FULL, IOERR, BUSY
  // on commit); a second ROLLBACK would then fail and hide the real error.
  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    if (this.database.inTransaction) await connection.executeQuery(CompiledQuery.raw('rollback'));
  }
}

class StoreSqliteDialect extends SqliteDialect {
  /** Shared by Kysely's driver and the direct lane, so each statement is prepared once. */
  private readonly statements: SqliteDatabase;

  constructor(private readonly database: BetterSqlite3.Database) {
    super({ database });
    this.statements = withStatementCache(database);
  }

  override createDriver(): StoreSqliteDriver {
    return new StoreSqliteDriver(this.database, this.statements);
  }

  override createAdapter(): DialectAdapter {
    const adapter = super.createAdapter();
    setDirectLane(adapter, new SqliteDirectLane(this.database, this.statements));
    return adapter;
  }
}
