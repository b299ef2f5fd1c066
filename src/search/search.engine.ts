import type { Logger } from '../lib/logger.js';
import type { ChunkRow, Collection, DocFilter, FullTextDialect, Store, TextCandidate } from '../store/index.js';
import { EmbeddingBackfill } from './embedding-backfill.js';
import type { EmbeddingsClient } from './embeddings.js';
import { embeddingState, type EmbeddingState } from './embedding-state.js';
import { chunkTexts, chunkVectors, embeddingCounts, recentEmbeddedChunks } from './search.repo.js';
import type { Executor } from './search.tables.js';
import { queryTerms, tokenize } from './terms.js';
import { decodeVector, dot, encodeVector } from './vectors.js';

/** Tuning of a SearchEngine; every field has a default. */
export interface SearchEngineOptions {
  store: Store;
  /** Null: full-text ranking only (no `embeddings.base_url`). */
  embeddings: EmbeddingsClient | null;
  logger: Logger;
  /** Documents of at most this many chunks are embedded before their write; larger ones in the background. Default 32. */
  inlineEmbedMaxChunks?: number;
  /** Time a write waits for its inline embeddings before indexing without them. Default 10 s. */
  inlineEmbedTimeoutMs?: number;
  /** Time a search waits for the query's embedding before ranking by full text alone. Default 5 s. */
  queryEmbedTimeoutMs?: number;
  /** Vector-only candidates are looked for among this many newest embedded chunks of the collection. Default 2000. */
  vectorScanLimit?: number;
  /** Cosine similarity a chunk needs to enter the results without a full-text match. Default 0.3. */
  minSimilarity?: number;
  /** Share of the vector similarity in the combined score when a query vector exists. Default 0.5. */
  vectorWeight?: number;
  /** Chunks embedded per background request. Default 64. */
  backfillBatch?: number;
  /** First retry delay of the background embedder after a failure, doubled up to 10 min. Default 30 s. */
  retryMs?: number;
  /** False: chunks left without a vector wait for `embedPending()` (tests, benchmarks). Default true. */
  backgroundEmbedding?: boolean;
  /**
   * Full-text cost bound. Ranking costs about one bm25 / ts_rank_cd
   * computation per matching chunk, so only the rarest query terms whose
   * match counts add up to at most this are ranked; more frequent terms act
   * as stop words (as in Lucene's common-terms query). Default 3000.
   */
  textMatchBudget?: number;
  /** When even the rarest term has more matches than `textMatchBudget`, only its this many newest matches are ranked. Default 500. */
  recentWindow?: number;
}

/** Chunks tokenised and inserted together by `replace`. */
const REPLACE_BATCH = 256;

/**
 * A document ready to be written: its chunks and their vectors where embedding succeeded. The chunks' search
 * terms are made as they are written, a batch at a time (`replace`): for a 10 MiB document they are several
 * times its size, and held whole they were the largest part of an upload's memory.
 */
export interface PreparedDocument {
  readonly chunks: readonly string[];
  /** One per chunk; null while a chunk waits for the background embedder. */
  readonly vectors: readonly (Float32Array | null)[];
}

/** One matching chunk of a document. */
export interface ChunkMatch {
  /** The chunk's row id (for `chunkTexts`). */
  id: number;
  /** Position of the chunk in its document, from 0. */
  chunk: number;
  /** Combined score in 0..1. */
  score: number;
}

/** One matching document. */
export interface SearchHit {
  docId: string;
  /** Score of its best chunk, in 0..1. */
  score: number;
  /** Its best chunks, best first (at most `matchesPerDoc`). */
  matches: ChunkMatch[];
}

/** A ranked search in one collection. */
export interface SearchRequest {
  collection: Collection;
  query: string;
  /** Most chunks taken from each ranking (full text, vectors) before documents are formed. */
  candidates: number;
  /** Only documents selected by this subquery. */
  allowed?: DocFilter | undefined;
  /** Matches kept per document; default 3. */
  matchesPerDoc?: number;
  signal?: AbortSignal | undefined;
}

/** The ranked documents of a search. */
export interface SearchResult {
  /** Every candidate document, best first (score, then newest id). */
  hits: SearchHit[];
  /** The terms the full-text side searched for (for snippets). */
  terms: string[];
  /** Whether vector similarity took part (embeddings configured and the query embedded). */
  usedVectors: boolean;
}

const QUERY_CACHE_SIZE = 256;

/**
 * The hybrid search engine shared by memory and knowledge.
 *
 * Ranking: full-text candidates (SQLite FTS5 bm25 / PostgreSQL ts_rank_cd,
 * any query term matching), each scored relative to the best of them (0..1).
 * Their cost is bounded: only the rarest terms whose match counts fit
 * `textMatchBudget` are ranked (more frequent ones act as stop words), and a
 * query made only of very frequent terms ranks the newest `recentWindow`
 * matches of the rarest one. When embeddings are
 * configured, the query's vector is compared (cosine) with the candidates'
 * vectors and with the newest `vectorScanLimit` vectors of the collection
 * (which brings in matches that share no word with the query). A chunk's
 * score is `(1 − w)·text + w·max(0, cosine)`, `w = vectorWeight` (text alone
 * when there is no query vector); a document scores as its best chunk.
 *
 * Writes: `prepare` chunks' tokens and, for small documents, their vectors
 * (a failing or slow embeddings provider never fails the write); `replace` and
 * `remove` run inside the caller's transaction, so a document and its index
 * change together. Chunks left without a vector are embedded by the
 * engine's EmbeddingBackfill, retried with backoff; `close()` stops it.
 */
export class SearchEngine {
  readonly #store: Store;
  readonly #fullText: FullTextDialect;
  readonly #client: EmbeddingsClient | null;
  readonly #logger: Logger;
  readonly #inlineMax: number;
  readonly #inlineTimeoutMs: number;
  readonly #queryTimeoutMs: number;
  readonly #scanLimit: number;
  readonly #minSimilarity: number;
  readonly #vectorWeight: number;
  readonly #queryCache = new Map<string, Float32Array>();
  readonly #backfill: EmbeddingBackfill | null;
  readonly #background: boolean;
  readonly #textBudget: number;
  readonly #recentWindow: number;

  constructor(options: SearchEngineOptions) {
    this.#store = options.store;
    this.#fullText = options.store.fullText;
    this.#client = options.embeddings;
    this.#logger = options.logger.child({ source: 'search' });
    this.#inlineMax = options.inlineEmbedMaxChunks ?? 32;
    this.#inlineTimeoutMs = options.inlineEmbedTimeoutMs ?? 10_000;
    this.#queryTimeoutMs = options.queryEmbedTimeoutMs ?? 5_000;
    this.#scanLimit = options.vectorScanLimit ?? 2000;
    this.#minSimilarity = options.minSimilarity ?? 0.3;
    this.#vectorWeight = options.vectorWeight ?? 0.5;
    this.#backfill = this.#client
      ? new EmbeddingBackfill({
          store: this.#store,
          client: this.#client,
          logger: this.#logger,
          batch: options.backfillBatch ?? 64,
          retryMs: options.retryMs ?? 30_000,
        })
      : null;
    this.#background = options.backgroundEmbedding ?? true;
    this.#textBudget = options.textMatchBudget ?? 3000;
    this.#recentWindow = options.recentWindow ?? 500;
    // Catch up on chunks left unembedded by an earlier run (or written before embeddings were configured).
    if (this.#background) this.#backfill?.schedule();
  }

  /** Whether an embeddings provider is configured. */
  get hasEmbeddings(): boolean {
    return this.#client !== null;
  }

  /**
   * Tokenises `chunks` and, when the document is small enough, embeds them
   * (bounded by `inlineEmbedTimeoutMs`). An embeddings failure is logged and
   * leaves the vectors null for the background embedder; it never rejects.
   */
  async prepare(chunks: readonly string[], signal?: AbortSignal): Promise<PreparedDocument> {
    let vectors: (Float32Array | null)[] = chunks.map(() => null);
    if (this.#client && chunks.length > 0 && chunks.length <= this.#inlineMax) {
      try {
        const timeout = AbortSignal.timeout(this.#inlineTimeoutMs);
        vectors = await this.#client.embed(chunks, signal ? AbortSignal.any([signal, timeout]) : timeout);
      } catch (error) {
        this.#logger.warn(
          { err: errorText(error), chunks: chunks.length },
          'embedding failed; indexed by full text, vectors follow in the background',
        );
      }
    }
    return { chunks, vectors };
  }

  /**
   * Replaces the indexed chunks of `docId` in `collection` with `doc`'s,
   * inside the caller's transaction (or group-commit op).
   */
  async replace(trx: Executor, collection: Collection, docId: string, doc: PreparedDocument): Promise<void> {
    const model = this.#client?.model ?? null;
    await this.#fullText.deleteChunks(trx, collection, docId);
    // Tokenised and inserted a batch at a time: only one batch's terms are held (see `PreparedDocument`).
    for (let start = 0; start < doc.chunks.length; start += REPLACE_BATCH) {
      const rows: ChunkRow[] = [];
      for (let chunk = start; chunk < Math.min(doc.chunks.length, start + REPLACE_BATCH); chunk++) {
        const text = doc.chunks[chunk]!;
        const vector = doc.vectors[chunk] ?? null;
        rows.push({
          docId,
          chunk,
          text,
          tokens: tokenize(text),
          embedding: vector && model !== null ? encodeVector(vector) : null,
          embeddingModel: vector && model !== null ? model : null,
        });
      }
      await this.#fullText.insertChunks(trx, collection, rows);
    }
  }

  /** Removes every chunk of `docId` from the index, inside the caller's transaction. */
  async remove(trx: Executor, collection: Collection, docId: string): Promise<void> {
    await this.#fullText.deleteChunks(trx, collection, docId);
  }

  /** Call after the write of `doc` committed: wakes the background embedder when some chunk lacks a vector. */
  written(doc: PreparedDocument): void {
    if (this.#background && this.#backfill && doc.vectors.some((v) => v === null)) this.#backfill.schedule();
  }

  /**
   * Ranks the documents of a collection for `query`. Never throws on query
   * text (anything without letters or digits simply matches nothing on the
   * full-text side); an embeddings failure falls back to full text alone.
   */
  async search(request: SearchRequest): Promise<SearchResult> {
    const terms = queryTerms(request.query);
    const db = this.#store.db;
    const limit = Math.max(1, Math.floor(request.candidates));
    // The query's embedding (a network call) and the full-text ranking run side by side.
    const [queryVector, textHits] = await Promise.all([
      this.#queryVector(request.query, request.signal),
      this.#textCandidates(request.collection, terms, limit, request.allowed),
    ]);
    if (terms.length === 0 && !queryVector) return { hits: [], terms, usedVectors: false };

    interface Scored {
      id: number;
      docId: string;
      chunk: number;
      text: number;
      vector: number;
    }
    const scored = new Map<number, Scored>();
    const best = textHits.reduce((max, hit) => Math.max(max, hit.score), 0);
    for (const hit of textHits) {
      scored.set(hit.id, { ...hit, text: best > 0 ? hit.score / best : 1, vector: 0 });
    }

    if (queryVector && this.#client) {
      const model = this.#client.model;
      const rows = await recentEmbeddedChunks(db, {
        collection: request.collection,
        model,
        allowed: request.allowed,
        limit: this.#scanLimit,
      });
      const seen = new Set<number>();
      const vectorOnly: Scored[] = [];
      for (const row of rows) {
        seen.add(row.id);
        const similarity = similarityOf(queryVector, row.embedding);
        const entry = scored.get(row.id);
        if (entry) entry.vector = similarity;
        else if (similarity >= this.#minSimilarity) {
          vectorOnly.push({ id: row.id, docId: row.doc_id, chunk: row.chunk, text: 0, vector: similarity });
        }
      }
      const missing = textHits.map((hit) => hit.id).filter((id) => !seen.has(id));
      for (const row of await chunkVectors(db, missing, model)) {
        const entry = scored.get(row.id);
        if (entry) entry.vector = similarityOf(queryVector, row.embedding);
      }
      vectorOnly.sort((a, b) => b.vector - a.vector || b.id - a.id);
      for (const entry of vectorOnly.slice(0, limit)) scored.set(entry.id, entry);
    }

    const weight = queryVector ? this.#vectorWeight : 0;
    const perDoc = request.matchesPerDoc ?? 3;
    const docs = new Map<string, ChunkMatch[]>();
    for (const entry of scored.values()) {
      const score = clamp01((1 - weight) * entry.text + weight * entry.vector);
      const match: ChunkMatch = { id: entry.id, chunk: entry.chunk, score };
      const list = docs.get(entry.docId);
      if (list) list.push(match);
      else docs.set(entry.docId, [match]);
    }
    const hits: SearchHit[] = [];
    for (const [docId, matches] of docs) {
      matches.sort((a, b) => b.score - a.score || a.chunk - b.chunk);
      hits.push({ docId, score: matches[0]!.score, matches: matches.slice(0, perDoc) });
    }
    hits.sort((a, b) => b.score - a.score || (a.docId < b.docId ? 1 : a.docId > b.docId ? -1 : 0));
    return { hits, terms, usedVectors: queryVector !== null };
  }

  /** The text of the chunks with these row ids (for snippets and tool results). */
  chunkTexts(ids: readonly number[]): Promise<Map<number, string>> {
    return chunkTexts(this.#store.db, ids);
  }

  /**
   * How far vector search covers each of `docs` (id and chunk count) in
   * `collection`: `off` for all when embeddings are not configured (no query
   * then), otherwise counted from the index in one grouped query.
   */
  async embeddingStates(
    collection: Collection,
    docs: ReadonlyArray<{ id: string; chunkCount: number }>,
  ): Promise<Map<string, EmbeddingState>> {
    const out = new Map<string, EmbeddingState>();
    const client = this.#client;
    if (!client) {
      for (const doc of docs) out.set(doc.id, embeddingState(doc.chunkCount, null));
      return out;
    }
    const ids = docs.map((doc) => doc.id);
    const counts = await embeddingCounts(this.#store.db, collection, ids, client.model);
    for (const doc of docs) out.set(doc.id, embeddingState(doc.chunkCount, counts.get(doc.id)));
    return out;
  }

  /**
   * Embeds every chunk still waiting for a vector, now, and resolves with how
   * many were embedded. Rejects with the provider's error (the background
   * loop keeps retrying on its own). 0 when embeddings are not configured.
   */
  async embedPending(): Promise<number> {
    return this.#backfill ? this.#backfill.drain() : 0;
  }

  /** Stops the background embedder (aborting its request) and waits for it. Idempotent. */
  async close(): Promise<void> {
    await this.#backfill?.close();
  }

  /**
   * Full-text candidates within the cost bounds: the rarest terms whose
   * match counts fit `textMatchBudget` are ranked over all their matches;
   * when even the rarest term is more frequent, its `recentWindow` newest
   * matches are ranked instead.
   */
  async #textCandidates(
    collection: Collection,
    terms: readonly string[],
    limit: number,
    allowed: SearchRequest['allowed'],
  ): Promise<TextCandidate[]> {
    if (terms.length === 0) return [];
    const db = this.#store.db;
    const counts = await this.#fullText.termCounts(db, collection, terms, this.#textBudget + 1);
    const present = terms
      .map((term, i) => ({ term, count: counts[i] ?? 0 }))
      .filter((t) => t.count > 0)
      .sort((a, b) => a.count - b.count);
    const rarest = present[0];
    if (!rarest) return [];
    if (rarest.count > this.#textBudget) {
      const recent = await this.#fullText.recentMatches(db, {
        collection,
        terms: [rarest.term],
        limit: this.#recentWindow,
        allowed,
      });
      return recent.sort((a, b) => b.score - a.score || b.id - a.id).slice(0, limit);
    }
    const ranked: string[] = [];
    let total = 0;
    for (const { term, count } of present) {
      if (total + count > this.#textBudget) break;
      ranked.push(term);
      total += count;
    }
    return this.#fullText.bestMatches(db, { collection, terms: ranked, limit, allowed });
  }

  async #queryVector(query: string, signal: AbortSignal | undefined): Promise<Float32Array | null> {
    const client = this.#client;
    const text = query.trim();
    if (!client || text === '') return null;
    const cached = this.#queryCache.get(text);
    if (cached) {
      this.#queryCache.delete(text);
      this.#queryCache.set(text, cached);
      return cached;
    }
    try {
      const timeout = AbortSignal.timeout(this.#queryTimeoutMs);
      const [vector] = await client.embed([text], signal ? AbortSignal.any([signal, timeout]) : timeout);
      if (!vector) return null;
      if (this.#queryCache.size >= QUERY_CACHE_SIZE) this.#queryCache.delete(this.#queryCache.keys().next().value!);
      this.#queryCache.set(text, vector);
      return vector;
    } catch (error) {
      this.#logger.warn({ err: errorText(error) }, 'query embedding failed; ranking by full text alone');
      return null;
    }
  }
}

function similarityOf(query: Float32Array, bytes: Buffer | null): number {
  if (!bytes) return 0;
  const vector = decodeVector(bytes);
  return vector ? Math.max(0, dot(query, vector)) : 0;
}

function clamp01(x: number): number {
  return x < 0 ? 0 : x > 1 ? 1 : x;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
