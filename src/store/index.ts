export type { Database, GatewayMetaTable, SchemaMigrationsTable } from './database.js';
export { StoreUnavailableError } from './errors.js';
export { GroupCommit, type GroupCommitOptions, type GroupCommitStats, type WriteOp } from './group-commit.js';
export { getMeta, setMeta } from './meta.repo.js';
export { type Migration } from './migrate.js';
export { type Store, type StoreDriver, type StoreOptions, createStore, openStore } from './store.js';
