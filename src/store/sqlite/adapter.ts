import type { StoreAdapter } from '../adapter.js';
import { sqliteFullText } from './fulltext.js';

/**
 * SQLite: one gateway process per database file, and one writer at a time
 * (BEGIN IMMEDIATE), so an exclusive write is an ordinary group-commit op:
 * the writer's batch is the only write transaction there is. No lock is
 * taken; `lockName` only documents the caller's intent.
 */
export const sqliteAdapter: StoreAdapter = {
  shared: false,
  fullText: sqliteFullText,
  exclusive: (_db, writer, _lockName, fn) => writer.run(fn),
  // One writer at a time already: a write transaction holds every lock there is.
  tryLock: () => Promise.resolve(true),
};
