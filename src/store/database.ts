/**
 * Table types for Kysely, one interface per table, keyed by table name in
 * `Database`. A migration that adds a table adds its interface here.
 *
 * Conventions that keep SQLite and PostgreSQL answering identically:
 * - timestamps are ISO 8601 UTC text with milliseconds (`isoTime()` from
 *   lib/clock), so they sort and compare the same as text on both;
 * - booleans are `integer` 0/1 (SQLite has no boolean type);
 * - JSON is stored as `text` and parsed by the repository;
 * - integer columns come back as JS numbers on both (PostgreSQL int8 is
 *   parsed to number by the store, exact below 2^53).
 */

/** `schema_migrations`: one row per applied migration (written by migrate.ts only). */
export interface SchemaMigrationsTable {
  name: string;
  applied_at: string;
}

/** `gateway_meta`: small key/value facts about this gateway instance. */
export interface GatewayMetaTable {
  key: string;
  value: string;
  updated_at: string;
}

/** Every table the store knows, for `Kysely<Database>`. */
export interface Database {
  schema_migrations: SchemaMigrationsTable;
  gateway_meta: GatewayMetaTable;
}
