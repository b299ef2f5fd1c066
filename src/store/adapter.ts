import type { Kysely, Transaction } from 'kysely';
import type { Database } from './database.js';
import type { FullTextDialect } from './fulltext.js';
import type { GroupCommit, WriteOp } from './group-commit.js';

/**
 * What differs per database beyond SQL syntax, one object per database
 * (`sqlite/adapter.ts`, `postgres/adapter.ts`), after Kysely's own
 * DialectAdapter. The store exposes it through its own members (`shared`,
 * `fullText`, `exclusive`), so no code outside `store/` asks which database
 * it runs on.
 */
export interface StoreAdapter {
  /** Whether other gateway processes may share the database (`Store.shared`). */
  readonly shared: boolean;
  /** The full-text dialect of `search_chunks` (`Store.fullText`). */
  readonly fullText: FullTextDialect;
  /** `Store.exclusive` over this database's `db` and `writer`. */
  exclusive<T>(db: Kysely<Database>, writer: GroupCommit, lockName: string, fn: WriteOp<T>): Promise<T>;
  /** `Store.tryLock` inside a transaction of this database. */
  tryLock(trx: Transaction<Database>, lockName: string): Promise<boolean>;
}
