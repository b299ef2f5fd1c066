import { type Clock, isoTime } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import { type Collection, type EmbeddingState, type SearchEngine, chunkText } from '../search/index.js';
import type { Store } from '../store/index.js';
import {
  type KnowledgeFilters,
  type KnowledgeRecord,
  deleteKnowledge,
  getKnowledge,
  getKnowledgeContent,
  insertKnowledge,
  knowledgeByIds,
  knowledgeFilter,
  listKnowledge,
  markIndexed,
} from './knowledge.repo.js';

/** The search-engine collection of knowledge chunks. */
export const KNOWLEDGE_COLLECTION: Collection = 'knowledge';

/** Largest document text accepted, in UTF-8 bytes (DECISIONS §9: up to 10 MiB). */
export const KNOWLEDGE_MAX_CONTENT_BYTES = 10 * 1024 * 1024;

/** Best chunks reported per document of a search. */
export const KNOWLEDGE_MATCHES_PER_DOC = 3;

/** A document to add. */
export interface NewKnowledge {
  title: string;
  content: string;
  source: string;
  metadata?: Record<string, unknown> | undefined;
}

/** A listing or search of documents. */
export interface KnowledgeQuery extends KnowledgeFilters {
  /** Ranked search when non-blank; otherwise newest first. */
  query?: string | undefined;
  limit: number;
  signal?: AbortSignal | undefined;
}

/** One matching chunk of a document, with its full text. */
export interface KnowledgeMatch {
  chunk: number;
  text: string;
  score: number;
}

/** A document as the API shows it: the stored record and how far vector search covers it. */
export interface KnowledgeEntry extends KnowledgeRecord {
  embedding: EmbeddingState;
}

/** A document of a listing; `score` and `matches` only with a query. */
export interface KnowledgeItem {
  record: KnowledgeEntry;
  score?: number;
  matches?: KnowledgeMatch[];
}

/** A listing; `terms` are the query's search terms (for snippets), empty without a query. */
export interface KnowledgeList {
  items: KnowledgeItem[];
  terms: string[];
}

/** What KnowledgeService needs. */
export interface KnowledgeServiceOptions {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  search: SearchEngine;
}

/**
 * The knowledge base: documents chunked (paragraph-aware, ~800–1200
 * characters with a small overlap) and indexed for hybrid search. A document
 * and all its chunks are written in one group-commit transaction, so a search
 * never sees half a document.
 */
export class KnowledgeService {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #ids: IdGenerator;
  readonly #search: SearchEngine;
  /**
   * Documents are chunked and indexed one at a time (ADR 0043): a 10 MiB document's chunks and search terms
   * are several times its size while they are built, so uploads at once hold one such set, not one each.
   */
  #indexing: Promise<unknown> = Promise.resolve();

  constructor(options: KnowledgeServiceOptions) {
    this.#store = options.store;
    this.#clock = options.clock;
    this.#ids = options.ids;
    this.#search = options.search;
  }

  /**
   * Chunks, indexes and stores a document; `size_bytes` is the UTF-8 size of
   * `content`. Its `embedding` says which chunks still wait for a vector.
   */
  async create(input: NewKnowledge, signal?: AbortSignal): Promise<KnowledgeEntry> {
    return this.#oneAtATime(() => this.#create(input, signal));
  }

  async #create(input: NewKnowledge, signal?: AbortSignal): Promise<KnowledgeEntry> {
    const doc = await this.#search.prepare(chunkText(input.content), signal);
    const now = isoTime(this.#clock.now());
    const record: KnowledgeRecord = {
      id: this.#ids.next('kn'),
      title: input.title,
      source: input.source,
      metadata: input.metadata ?? {},
      chunkCount: doc.chunks.length,
      sizeBytes: Buffer.byteLength(input.content, 'utf8'),
      createdAt: now,
      indexedAt: now,
    };
    await this.#store.writer.run(async (trx) => {
      await insertKnowledge(trx, record, input.content);
      await this.#search.replace(trx, KNOWLEDGE_COLLECTION, record.id, doc);
    });
    this.#search.written(doc);
    return (await this.#withEmbedding([record]))[0]!;
  }

  /** Document `id`, or null. */
  async get(id: string): Promise<KnowledgeEntry | null> {
    const record = await getKnowledge(this.#store.db, id);
    return record ? (await this.#withEmbedding([record]))[0]! : null;
  }

  /** Deletes document `id` and its chunks; false when there is none. */
  async remove(id: string): Promise<boolean> {
    return this.#store.writer.run(async (trx) => {
      const deleted = await deleteKnowledge(trx, id);
      if (deleted) await this.#search.remove(trx, KNOWLEDGE_COLLECTION, id);
      return deleted;
    });
  }

  /**
   * Re-chunks and re-indexes document `id` from its stored text (vectors are
   * computed again); `indexed_at` moves to now. Null when there is none.
   */
  async reindex(id: string, signal?: AbortSignal): Promise<KnowledgeEntry | null> {
    return this.#oneAtATime(() => this.#reindex(id, signal));
  }

  async #reindex(id: string, signal?: AbortSignal): Promise<KnowledgeEntry | null> {
    const content = await getKnowledgeContent(this.#store.db, id);
    if (content === null) return null;
    const doc = await this.#search.prepare(chunkText(content), signal);
    const indexedAt = isoTime(this.#clock.now());
    const done = await this.#store.writer.run(async (trx) => {
      const found = await markIndexed(trx, id, { chunkCount: doc.chunks.length, indexedAt });
      if (found) await this.#search.replace(trx, KNOWLEDGE_COLLECTION, id, doc);
      return found;
    });
    if (!done) return null;
    this.#search.written(doc);
    return this.get(id);
  }

  /**
   * Lists documents. With a non-blank `query`: the `limit` best documents by
   * hybrid search, ranked by their best chunk, each with `score` (0..1) and
   * its best chunks (`matches`, full chunk text). Without: newest first.
   */
  async list(query: KnowledgeQuery): Promise<KnowledgeList> {
    const filters: KnowledgeFilters = { source: query.source, metadata: query.metadata };
    if (query.query === undefined || query.query.trim() === '') {
      const records = await this.#withEmbedding(await listKnowledge(this.#store.db, filters, query.limit));
      return { items: records.map((record) => ({ record })), terms: [] };
    }
    const result = await this.#search.search({
      collection: KNOWLEDGE_COLLECTION,
      query: query.query,
      candidates: Math.max(200, query.limit * 20),
      allowed: knowledgeFilter(this.#store.db, filters),
      matchesPerDoc: KNOWLEDGE_MATCHES_PER_DOC,
      signal: query.signal,
    });
    const top = result.hits.slice(0, query.limit);
    const records = await knowledgeByIds(
      this.#store.db,
      top.map((hit) => hit.docId),
    );
    const texts = await this.#search.chunkTexts(top.flatMap((hit) => hit.matches.map((match) => match.id)));
    const states = await this.#search.embeddingStates(KNOWLEDGE_COLLECTION, [...records.values()]);
    const items: KnowledgeItem[] = [];
    for (const hit of top) {
      const found = records.get(hit.docId);
      if (!found) continue; // deleted between the search and this read
      const record: KnowledgeEntry = { ...found, embedding: states.get(found.id)! };
      const matches = hit.matches.flatMap((match) => {
        const text = texts.get(match.id);
        return text === undefined ? [] : [{ chunk: match.chunk, text, score: match.score }];
      });
      items.push({ record, score: hit.score, matches });
    }
    return { items, terms: result.terms };
  }

  /** Runs `job` once every indexing job before it has settled: one document is chunked and indexed at a time. */
  #oneAtATime<T>(job: () => Promise<T>): Promise<T> {
    const run = this.#indexing.then(job, job);
    this.#indexing = run.catch(() => undefined);
    return run;
  }

  /** The records with their embedding state (one query for all of them). */
  async #withEmbedding(records: readonly KnowledgeRecord[]): Promise<KnowledgeEntry[]> {
    const states = await this.#search.embeddingStates(KNOWLEDGE_COLLECTION, records);
    return records.map((record) => ({ ...record, embedding: states.get(record.id)! }));
  }
}
