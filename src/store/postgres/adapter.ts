import { sql } from 'kysely';
import type { StoreAdapter } from '../adapter.js';
import { postgresFullText } from './fulltext.js';

/**
 * PostgreSQL: several gateway processes may share the database. An
 * exclusive write runs in its own transaction (never in a group-commit
 * batch, whose other ops would wait on the lock) that first takes the
 * transaction-scoped advisory lock keyed by `hashtext('<lockName>:' ||
 * current_schema)`: one lock per name and schema, so gateways in different
 * schemas of one server never wait for each other. The lock is released by
 * the commit or rollback, and it makes READ COMMITTED reads inside `fn`
 * current with every earlier holder's commit.
 */
export const postgresAdapter: StoreAdapter = {
  shared: true,
  fullText: postgresFullText,
  exclusive: (db, _writer, lockName, fn) =>
    db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${lockKey(lockName)})`.execute(trx);
      return fn(trx);
    }),
  // Never waits, so a group-commit batch holding several such locks cannot deadlock with another process's.
  tryLock: async (trx, lockName) => {
    const result = await sql<{
      locked: boolean;
    }>`select pg_try_advisory_xact_lock(${lockKey(lockName)}) as locked`.execute(trx);
    return result.rows[0]?.locked === true;
  },
};

/** The advisory lock key of `lockName` in the current schema (gateways in different schemas never meet). */
function lockKey(lockName: string) {
  return sql`hashtext(${`${lockName}:`}::text || coalesce(current_schema(), ''))`;
}
