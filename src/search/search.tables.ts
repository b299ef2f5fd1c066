import type { Generated, Kysely, Transaction } from 'kysely';
import type { Database } from '../store/index.js';

export type { DocFilter } from '../store/index.js';

/**
 * `search_chunks` (migration 006_memory_knowledge): every indexed chunk of
 * every collection. The full-text side lives beside it per database
 * (SQLite: one contentless FTS5 table per collection, `memory_fts` and
 * `knowledge_fts`, rowid = `id`; PostgreSQL: a `tsv tsvector` column under
 * one partial GIN index per collection); chunks enter and leave the index
 * only through the store's full-text dialect (`store.fullText`).
 */
export interface SearchChunksTable {
  /** Never reused, so a late embedding cannot land on a chunk that replaced its own. */
  id: Generated<number>;
  /** `memory` | `knowledge`. */
  collection: string;
  doc_id: string;
  /** Position of the chunk in its document, from 0. */
  chunk: number;
  text: string;
  /** Unit-length float32 little-endian bytes; null until embedded. */
  embedding: Buffer | null;
  /** The model of `embedding`; null while the chunk waits for one. */
  embedding_model: string | null;
}

declare module '../store/database.js' {
  /** `Database` with the search index of 006_memory_knowledge. */
  interface Database {
    search_chunks: SearchChunksTable;
  }
}

/** `store.db`, a transaction, or a group-commit `trx`. */
export type Executor = Kysely<Database> | Transaction<Database>;
