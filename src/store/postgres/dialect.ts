import { type Dialect, type Kysely, PostgresDialect, sql } from 'kysely';
import { createRequire } from 'node:module';
import type PgModule from 'pg';
import { errorMessage } from '../errors.js';
import { guardDialect } from '../guarded-dialect.js';
import { namingPool } from './named-statements.js';

/** How to reach PostgreSQL. */
export interface PostgresDialectOptions {
  /** `postgres://` or `postgresql://` URL (config `storage.url`). */
  url: string | null | undefined;
  /** Schema to live in (search_path of every pooled connection); default: the server's default (public). */
  schema?: string | undefined;
  /** Pool size; default 10. */
  poolSize?: number | undefined;
  /** How long to wait for a connection before failing with StoreUnavailableError; default 2000 ms. */
  connectTimeoutMs?: number | undefined;
  /**
   * Told when a connection reports an error outside a query (the server
   * terminated its backend, the network dropped): the pool discards that
   * connection and the next query opens a fresh one. Default: ignored.
   */
  onConnectionError?: ((error: Error) => void) | undefined;
}

/** pg is loaded only when PostgreSQL is configured, so a SQLite gateway does not carry it in memory. */
const requireModule = createRequire(import.meta.url);
let pgModule: typeof PgModule | undefined;
/** The `pg` module, loaded on first use. */
export function loadPg(): typeof PgModule {
  pgModule ??= requireModule('pg') as typeof PgModule;
  return pgModule;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * A Kysely dialect over a `pg.Pool`. Connects lazily: no I/O happens here.
 * Throws a plain Error (naming `storage.url`, never echoing it: it may hold a
 * password) when the URL is missing or not a postgres URL, and when `schema`
 * is not a lower-case SQL identifier.
 *
 * int8 values (count(*), bigint columns) are parsed to JS numbers so
 * repositories see the same types as on SQLite.
 */
export function createPostgresDialect(options: PostgresDialectOptions): Dialect {
  const url = parsePostgresUrl(options.url);
  if (options.schema !== undefined) {
    if (!SCHEMA_NAME.test(options.schema)) {
      throw new Error(`postgres schema ${JSON.stringify(options.schema)} must match ${SCHEMA_NAME.source}`);
    }
    // Appended to any `options` the URL already carries, since pg lets the URL's win.
    const existing = url.searchParams.get('options');
    const searchPath = `-c search_path=${options.schema}`;
    url.searchParams.set('options', existing ? `${existing} ${searchPath}` : searchPath);
  }
  const pg = loadPg();
  const pool = new pg.Pool({
    connectionString: url.toString(),
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 2000,
    keepAlive: true,
    application_name: 'gatehouse',
    types: { getTypeParser: parserFor },
  });
  // A connection whose backend goes away emits 'error'; an EventEmitter
  // without a listener for it throws, which would crash the process. The pool
  // listens only while a client is idle, so every client gets a listener of
  // its own from birth, covering the time it is checked out (between the
  // queries of a transaction). The pool then discards it on release (it is no
  // longer queryable) and the next query connects anew; the query in flight
  // fails with StoreUnavailableError through the guard.
  const report = options.onConnectionError ?? (() => undefined);
  const onError = (error: Error): void => {
    try {
      report(error);
    } catch {
      // a reporter must not turn a dropped connection into a crash
    }
  };
  pool.on('error', () => undefined); // an idle client's error, already reported by its own listener
  pool.on('connect', (client) => {
    client.on('error', onError);
  });
  return guardDialect(new PostgresDialect({ pool: namingPool(pool) }), isPostgresUnavailable);
}

const parserFor: typeof PgModule.types.getTypeParser = (oid, format) => {
  const pg = loadPg();
  if (oid === pg.types.builtins.INT8 && format !== 'binary') return (value: string) => Number(value);
  const parser: unknown = pg.types.getTypeParser(oid, format);
  return parser;
};

/** `storage.url` as a URL; throws an Error naming the key (never echoing the URL) when it is missing or not postgres. */
export function parsePostgresUrl(raw: string | null | undefined): URL {
  if (raw === null || raw === undefined || raw.trim() === '') {
    throw new Error(
      'storage.url is required when storage.driver is "postgres" (postgres://user:password@host:port/database)',
    );
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error('storage.url is not a valid URL (expected postgres://user:password@host:port/database)');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new Error(`storage.url must use postgres:// or postgresql://, not ${url.protocol}//`);
  }
  return url;
}

/** Creates the schema when missing; tolerates another process creating it at the same moment. */
export async function ensurePostgresSchema<DB>(db: Kysely<DB>, schema: string): Promise<void> {
  try {
    await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
  } catch (error) {
    // IF NOT EXISTS still races on the catalog's unique index.
    const code = (error as { code?: unknown }).code;
    if (code !== '23505' && code !== '42P06') throw error;
  }
}

const NODE_NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);
// 08: connection exception; 53: insufficient resources; 57P01-03: shutting down / starting up.
const PG_UNAVAILABLE = /^(08|53|57P0[123])/;
const PG_CLIENT_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Cannot use a pool after calling end|not queryable/i;

/** Network errors, server shutdown and resource exhaustion, and use of an ended pool; not statement errors. */
export function isPostgresUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (NODE_NETWORK_CODES.has(code) || PG_UNAVAILABLE.test(code))) return true;
  return PG_CLIENT_MESSAGES.test(errorMessage(error));
}
