export type {
  Database,
  GatewayMetaTable,
  IdempotencyRecordsTable,
  MessagesTable,
  SchemaMigrationsTable,
  SessionsTable,
  TurnEventsTable,
  TurnsTable,
  UsageRecordsTable,
} from './database.js';
export { DataDirTakenError, InstanceTakenError, StoreUnavailableError } from './errors.js';
export {
  claimInstance,
  type InstanceClaim,
  type InstanceClaimOptions,
  type InstanceLockEvents,
} from './instance-claim.js';
export {
  COLLECTIONS,
  type ChunkRow,
  type Collection,
  type DocFilter,
  type FullTextDialect,
  type MatchQuery,
  type TextCandidate,
} from './fulltext.js';
export { GroupCommit, type GroupCommitOptions, type GroupCommitStats, type WriteOp } from './group-commit.js';
export { heartbeat, liveInstances, liveOwners, registerInstance, removeInstance } from './instances.repo.js';
export { StoreFaults, type StoreFaultMode } from './store-faults.js';
export { getMeta, setMeta } from './meta.repo.js';
export { prepared, preparedSql, PreparedQuery } from './prepared.js';
export { type Migration } from './migrate.js';
export { type Store, type StoreDriver, type StoreOptions, createStore, openStore, storageOf } from './store.js';
