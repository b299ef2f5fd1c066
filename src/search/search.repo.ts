/**
 * The SQL of search/: vectors and texts of `search_chunks`. Full-text
 * indexing and ranking differ per database and are the store's
 * (`store.fullText`).
 */
import { type SqlBool, sql } from 'kysely';
import type { Collection, DocFilter } from '../store/index.js';
import type { Executor } from './search.tables.js';

/** Most ids bound in one `in (…)` list. */
const ID_BATCH = 500;

/** `embedding_model` of a chunk the provider refused (e.g. too long): never retried with that model. */
export const REFUSED_MODEL = '';

/** A chunk with its vector (null when it has none). */
export interface ChunkVectorRow {
  id: number;
  doc_id: string;
  chunk: number;
  embedding: Buffer | null;
}

/**
 * The `limit` newest chunks of `collection` embedded with `model` (only of
 * the documents `allowed` selects, when given), newest first.
 */
export function recentEmbeddedChunks(
  ex: Executor,
  query: { collection: Collection; model: string; allowed?: DocFilter | undefined; limit: number },
): Promise<ChunkVectorRow[]> {
  let recent = ex
    .selectFrom('search_chunks')
    .select(['id', 'doc_id', 'chunk', 'embedding'])
    .where('collection', '=', query.collection)
    .where('embedding_model', '=', query.model);
  if (query.allowed) recent = recent.where(sql<SqlBool>`doc_id in (${query.allowed})`);
  return recent.orderBy('id', 'desc').limit(query.limit).execute();
}

/** The vectors of the chunks with these row ids that were embedded with `model` (others are left out). */
export async function chunkVectors(
  ex: Executor,
  ids: readonly number[],
  model: string,
): Promise<{ id: number; embedding: Buffer | null }[]> {
  const out: { id: number; embedding: Buffer | null }[] = [];
  for (let i = 0; i < ids.length; i += ID_BATCH) {
    const rows = await ex
      .selectFrom('search_chunks')
      .select(['id', 'embedding'])
      .where('id', 'in', ids.slice(i, i + ID_BATCH))
      .where('embedding_model', '=', model)
      .execute();
    out.push(...rows);
  }
  return out;
}

/** The text of the chunks with these row ids, by id (unknown ids are left out). */
export async function chunkTexts(ex: Executor, ids: readonly number[]): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  for (let i = 0; i < ids.length; i += ID_BATCH) {
    const rows = await ex
      .selectFrom('search_chunks')
      .select(['id', 'text'])
      .where('id', 'in', ids.slice(i, i + ID_BATCH))
      .execute();
    for (const row of rows) out.set(row.id, row.text);
  }
  return out;
}

/**
 * Forgets every vector (and refusal) of a model other than `model`: those
 * chunks wait for an embedding again, so every stored vector is comparable
 * with the query's.
 */
export async function forgetOtherModels(ex: Executor, model: string): Promise<void> {
  await ex
    .updateTable('search_chunks')
    .set({ embedding: null, embedding_model: null })
    .where('embedding_model', 'is not', null)
    .where('embedding_model', '<>', model)
    .execute();
}

/** Up to `limit` chunks waiting for an embedding (`embedding_model` null), oldest first. */
export function chunksAwaitingEmbedding(ex: Executor, limit: number): Promise<{ id: number; text: string }[]> {
  return ex
    .selectFrom('search_chunks')
    .select(['id', 'text'])
    .where('embedding_model', 'is', null)
    .orderBy('id')
    .limit(limit)
    .execute();
}

/**
 * Stores the embedding of each chunk that still waits for one: its vector
 * bytes and `model`, or, for a null vector (the provider refused the chunk),
 * no vector and REFUSED_MODEL, so it is not retried with that model. A chunk
 * embedded meanwhile (or replaced) is left alone.
 */
export async function storeEmbeddings(
  ex: Executor,
  model: string,
  results: readonly { id: number; embedding: Buffer | null }[],
): Promise<void> {
  for (const { id, embedding } of results) {
    await ex
      .updateTable('search_chunks')
      .set({ embedding, embedding_model: embedding ? model : REFUSED_MODEL })
      .where('id', '=', id)
      .where('embedding_model', 'is', null)
      .execute();
  }
}

/** How far the chunks of one document are embedded. */
export interface EmbeddingCounts {
  chunks: number;
  /** Chunks with a vector of `model`. */
  embedded: number;
  /** Chunks the provider refused (REFUSED_MODEL): never retried with this model. */
  refused: number;
}

/**
 * The embedding counts of each of `docIds` in `collection`, for vectors of
 * `model` (chunks of another model wait for the background embedder).
 * Documents without chunks are absent from the map.
 */
export async function embeddingCounts(
  ex: Executor,
  collection: Collection,
  docIds: readonly string[],
  model: string,
): Promise<Map<string, EmbeddingCounts>> {
  const out = new Map<string, EmbeddingCounts>();
  for (let i = 0; i < docIds.length; i += ID_BATCH) {
    const rows = await ex
      .selectFrom('search_chunks')
      .select((eb) => [
        'doc_id',
        eb.fn.countAll<number | string>().as('chunks'),
        sql<number | string>`sum(case when embedding_model = ${model} then 1 else 0 end)`.as('embedded'),
        sql<number | string>`sum(case when embedding_model = ${REFUSED_MODEL} then 1 else 0 end)`.as('refused'),
      ])
      .where('collection', '=', collection)
      .where('doc_id', 'in', docIds.slice(i, i + ID_BATCH))
      .groupBy('doc_id')
      .execute();
    // PostgreSQL answers count and sum as bigint text.
    for (const row of rows) {
      out.set(row.doc_id, {
        chunks: Number(row.chunks),
        embedded: Number(row.embedded),
        refused: Number(row.refused),
      });
    }
  }
  return out;
}
