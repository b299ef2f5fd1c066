import { type Kysely, type Transaction, sql } from 'kysely';
import type { Database } from './database.js';

/**
 * One schema change, written once per database in `sqlite/migrations.ts` and
 * `postgres/migrations.ts` under the same name. `up` holds plain SQL, one
 * statement per string (better-sqlite3 refuses several in one call). No
 * PRAGMA or transaction statements: the runner already wraps each migration
 * in a transaction.
 */
export interface Migration {
  /** `NNN_snake_case`, strictly increasing within the list. */
  readonly name: string;
  readonly up: readonly string[];
}

/** What `migrate` needs to know. */
export interface MigrateOptions {
  /** Selects the lock: PostgreSQL takes an advisory lock, SQLite relies on BEGIN IMMEDIATE. */
  dialect: 'sqlite' | 'postgres';
  migrations: readonly Migration[];
  /** ISO 8601 timestamp written to `schema_migrations.applied_at`. */
  now(): string;
}

const NAME = /^\d{3}_[a-z0-9_]+$/;

/**
 * Applies the pending migrations in order, each in its own transaction, and
 * returns the names applied (empty when the database was up to date).
 *
 * Safe when several processes start at once: every transaction first takes
 * the migration lock (PostgreSQL: `pg_advisory_xact_lock` keyed by the
 * current schema; SQLite: the write lock of BEGIN IMMEDIATE), then re-checks
 * whether its migration is still pending.
 *
 * Throws when the list is malformed, when the database holds a migration the
 * list does not know (it was migrated by a newer Gatehouse: running an older
 * one against it is refused), or when a statement fails (that migration is
 * rolled back; earlier ones stay applied).
 */
export async function migrate(db: Kysely<Database>, options: MigrateOptions): Promise<string[]> {
  const { dialect, migrations } = options;
  validateMigrations(migrations);

  const applied = await db.transaction().execute(async (trx) => {
    await lockMigrations(trx, dialect);
    await sql`create table if not exists schema_migrations (name text primary key, applied_at text not null)`.execute(
      trx,
    );
    const rows = await trx.selectFrom('schema_migrations').select('name').execute();
    return new Set(rows.map((row) => row.name));
  });

  const known = new Set(migrations.map((m) => m.name));
  const unknown = [...applied].filter((name) => !known.has(name)).sort();
  if (unknown.length > 0) {
    throw new Error(
      `the database was migrated by a newer Gatehouse (unknown migrations: ${unknown.join(', ')}); refusing to start`,
    );
  }

  const done: string[] = [];
  for (const migration of migrations) {
    if (applied.has(migration.name)) continue;
    const ran = await db.transaction().execute(async (trx) => {
      await lockMigrations(trx, dialect);
      const existing = await trx
        .selectFrom('schema_migrations')
        .select('name')
        .where('name', '=', migration.name)
        .executeTakeFirst();
      if (existing) return false; // another process applied it while we waited for the lock
      for (const statement of migration.up) await sql.raw(statement).execute(trx);
      await trx.insertInto('schema_migrations').values({ name: migration.name, applied_at: options.now() }).execute();
      return true;
    });
    if (ran) done.push(migration.name);
  }
  return done;
}

/** Throws unless names are well formed, unique and strictly increasing, and every migration has SQL. */
export function validateMigrations(migrations: readonly Migration[]): void {
  let previous = '';
  for (const migration of migrations) {
    if (!NAME.test(migration.name)) {
      throw new Error(`migration name ${JSON.stringify(migration.name)} must look like 001_snake_case`);
    }
    if (migration.name <= previous) {
      throw new Error(`migration ${migration.name} must come after ${previous} (names strictly increasing)`);
    }
    if (migration.up.length === 0) throw new Error(`migration ${migration.name} has no statements`);
    previous = migration.name;
  }
}

async function lockMigrations(trx: Transaction<Database>, dialect: MigrateOptions['dialect']): Promise<void> {
  if (dialect !== 'postgres') return;
  // Keyed by schema so throwaway test schemas do not queue behind each other.
  await sql`select pg_advisory_xact_lock(hashtext('gatehouse.migrate:' || coalesce(current_schema(), '')))`.execute(
    trx,
  );
}
