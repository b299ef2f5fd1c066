/**
 * The search engine shared by memory and knowledge (DECISIONS §9: hybrid
 * search): chunking, one tokenizer for both databases, full text always
 * (the store's full-text dialect: SQLite FTS5 bm25 / PostgreSQL tsvector +
 * ts_rank_cd) plus vector similarity when `embeddings.base_url` is
 * configured, with a background embedder for chunks still without a vector.
 */
import type { Logger } from '../lib/logger.js';
import type { Store } from '../store/index.js';
import { type EmbeddingsConfig, createEmbeddingsClient } from './embeddings.js';
import { SearchEngine } from './search.engine.js';

export { type ChunkOptions, chunkText } from './chunker.js';
export { type EmbeddingState, embeddingState } from './embedding-state.js';
export {
  DEFAULT_EMBEDDING_MODEL,
  type EmbeddingsClient,
  type EmbeddingsClientOptions,
  type EmbeddingsConfig,
  EmbeddingsError,
  createEmbeddingsClient,
} from './embeddings.js';
export {
  type ChunkMatch,
  type PreparedDocument,
  SearchEngine,
  type SearchEngineOptions,
  type SearchHit,
  type SearchRequest,
  type SearchResult,
} from './search.engine.js';
export { COLLECTIONS, type Collection } from '../store/index.js';
export type { DocFilter, Executor, SearchChunksTable } from './search.tables.js';
export { normalizeText, queryTerms, snippet, tokenize } from './terms.js';

/**
 * The gateway's search engine: the embeddings client from the `embeddings`
 * config block (none when `base_url` is null) over `store`. Close it before
 * the store: it owns the background embedder (EmbeddingBackfill).
 */
export function createSearchEngine(options: {
  store: Store;
  embeddings: EmbeddingsConfig;
  logger: Logger;
}): SearchEngine {
  return new SearchEngine({
    store: options.store,
    embeddings: createEmbeddingsClient(options.embeddings),
    logger: options.logger,
  });
}
