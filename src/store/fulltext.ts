import type { Expression, Kysely, Transaction } from 'kysely';
import type { Database } from './database.js';

/** `store.db`, a transaction, or a group-commit `trx`. */
type Executor = Kysely<Database> | Transaction<Database>;

/**
 * The indexed collections of `search_chunks` (migration 006_memory_knowledge);
 * each has its own full-text index (SQLite FTS5 table, PostgreSQL partial GIN index).
 */
export const COLLECTIONS = ['memory', 'knowledge'] as const;

/** One of COLLECTIONS. */
export type Collection = (typeof COLLECTIONS)[number];

/**
 * Restricts a search to some documents of the collection: a subquery
 * selecting their ids (e.g. `db.selectFrom('memories').select('id').where(…)`),
 * inlined into the search SQL so filters and ranking run in one query.
 */
export type DocFilter = Expression<{ id: string }>;

/** One chunk to index, with its tokens (src/search/terms.ts) and its embedding when there is one. */
export interface ChunkRow {
  docId: string;
  chunk: number;
  text: string;
  tokens: readonly string[];
  embedding: Buffer | null;
  embeddingModel: string | null;
}

/** A chunk matching the query's terms, with its full-text score (> 0, higher is better; scale is per backend). */
export interface TextCandidate {
  id: number;
  docId: string;
  chunk: number;
  score: number;
}

/** A full-text match query: chunks of `collection` holding any of `terms`, optionally only of some documents. */
export interface MatchQuery {
  collection: Collection;
  /** Distinct normalised terms (`queryTerms`), letters and digits only. */
  terms: readonly string[];
  /** Most chunks returned. */
  limit: number;
  allowed?: DocFilter | undefined;
}

/**
 * The full text of `search_chunks`, the one search topic that differs per
 * database (`store.fullText`): how chunks enter and leave the full-text
 * index, how matches are counted and ranked (SQLite FTS5 with bm25,
 * `sqlite/fulltext.ts`; PostgreSQL tsvector + GIN with ts_rank_cd,
 * `postgres/fulltext.ts`). Writes take the caller's transaction so a
 * document and its index change together.
 */
export interface FullTextDialect {
  /** Inserts the chunks of one document (its old chunks must be deleted first). */
  insertChunks(trx: Executor, collection: Collection, rows: readonly ChunkRow[]): Promise<void>;
  /** Removes every chunk of the document (index included). */
  deleteChunks(trx: Executor, collection: Collection, docId: string): Promise<void>;
  /** Per term, how many chunks of the collection hold it, counted up to `cap` (so the cost is bounded by it). */
  termCounts(db: Executor, collection: Collection, terms: readonly string[], cap: number): Promise<number[]>;
  /** The `limit` best-ranked matching chunks, best first. Costs about one rank computation per match. */
  bestMatches(db: Executor, query: MatchQuery): Promise<TextCandidate[]>;
  /** The `limit` newest matching chunks with their rank, in no particular order. Costs about `limit` rank computations. */
  recentMatches(db: Executor, query: MatchQuery): Promise<TextCandidate[]>;
}

/**
 * Splits rows into batches of a few fixed sizes (256, 16, 1), so that the
 * multi-row statements have few distinct shapes (SQLite's prepared-statement
 * cache is keyed by SQL text).
 */
export function fixedBatches<T>(rows: readonly T[]): T[][] {
  const out: T[][] = [];
  let i = 0;
  for (const size of [256, 16, 1]) {
    while (rows.length - i >= size) {
      out.push(rows.slice(i, i + size));
      i += size;
    }
  }
  return out;
}
