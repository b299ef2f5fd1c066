import { createHash } from 'node:crypto';
import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type PgModule from 'pg';

/** Distinct statement texts remembered (their use counts); texts beyond it run unnamed. */
const TRACKED = 4096;
/** Distinct statements prepared per connection, at most: the turn path uses a few dozen. */
const NAMED = 256;
/** Uses of a text before it is prepared: a one-off (an `in` list of a new length) stays unnamed. */
const USES_BEFORE_NAMING = 2;

/** Data statements only: DDL, `set`, transaction control and multi-statement text run as they are. */
const DATA_STATEMENT = /^\s*(?:select|insert|update|delete|with)\b/i;

/** A `set local` that may ride with the `begin` before it. */
const SET_LOCAL = /^set local [a-z_]+ = [a-z0-9_]+$/i;
/** The end of a transaction: of one that sent nothing yet, nothing to send. */
const END_TRANSACTION = /^(?:commit|rollback)$/i;

/**
 * The names of recurring statements. PostgreSQL parses and plans an unnamed
 * statement on every run; a named one is parsed once per connection, and
 * each later run only binds and executes it, which on the turn path's short
 * statements saves a good part of the server's CPU (ADR 0031). The name is
 * a hash of the text, so one name never stands for two texts; both sets are
 * bounded.
 */
export class StatementNames {
  readonly #uses = new Map<string, number>();
  readonly #names = new Map<string, string>();

  /** The name to run `text` under, or null to run it unnamed. */
  nameOf(text: string): string | null {
    const known = this.#names.get(text);
    if (known !== undefined) return known;
    if (!DATA_STATEMENT.test(text)) return null;
    const uses = (this.#uses.get(text) ?? 0) + 1;
    if (uses < USES_BEFORE_NAMING) {
      if (this.#uses.size < TRACKED) this.#uses.set(text, uses);
      return null;
    }
    this.#uses.delete(text);
    if (this.#names.size >= NAMED) return null;
    const name = `gh_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
    this.#names.set(text, name);
    return name;
  }

  /** Statements named so far. */
  get size(): number {
    return this.#names.size;
  }
}

/**
 * Kysely's pool over a `pg.Pool` whose clients run recurring data
 * statements as named prepared statements (`StatementNames`); cursors and
 * everything else pass through unchanged.
 */
export function namingPool(pool: PgModule.Pool, names = new StatementNames()): PostgresPool {
  return {
    async connect(): Promise<PostgresPoolClient> {
      const client = await pool.connect();
      // A transaction's `begin` is held back and sent with its next statement when that one is a parameterless
      // `set local` (one round trip for both); an empty transaction costs none (ADR 0032).
      let heldBegin = false;
      const run = <R>(
        text: string,
        parameters: ReadonlyArray<unknown> | undefined,
      ): Promise<PostgresQueryResult<R>> => {
        const name = names.nameOf(text);
        const values = parameters as unknown[];
        return (name === null
          ? client.query(text, values)
          : client.query({ name, text, values })) as unknown as Promise<PostgresQueryResult<R>>;
      };
      async function afterBegin<R>(text: string, parameters?: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> {
        heldBegin = false;
        if (SET_LOCAL.test(text) && (parameters?.length ?? 0) === 0) {
          const results = (await client.query(`begin; ${text}`)) as unknown as PostgresQueryResult<R>[];
          return results[results.length - 1]!;
        }
        if (END_TRANSACTION.test(text)) return { command: 'ROLLBACK', rowCount: 0, rows: [] } as never;
        await client.query('begin');
        return run<R>(text, parameters);
      }
      function query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
      function query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
      function query<R>(
        sqlOrCursor: string | PostgresCursor<R>,
        parameters?: ReadonlyArray<unknown>,
      ): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
        if (typeof sqlOrCursor !== 'string') {
          if (heldBegin) {
            // The client runs its queries in order: the begin goes out first (its failure fails the cursor's too).
            heldBegin = false;
            void client.query('begin').catch(() => undefined);
          }
          return client.query(sqlOrCursor as never);
        }
        if (heldBegin) return afterBegin<R>(sqlOrCursor, parameters);
        if (sqlOrCursor === 'begin' && (parameters?.length ?? 0) === 0) {
          heldBegin = true;
          return Promise.resolve({ command: 'BEGIN', rowCount: 0, rows: [] } as never);
        }
        return run<R>(sqlOrCursor, parameters);
      }
      return {
        query,
        release: () => {
          heldBegin = false;
          client.release();
        },
      };
    },
    end: () => pool.end(),
  };
}
