import type { EmbeddingCounts } from './search.repo.js';

/**
 * How far vector search covers one document (the wire's `embedding`):
 * `off` — no embeddings provider is configured (full text only); `pending` —
 * some chunks wait for the background embedder; `ready` — every chunk has a
 * vector; `failed` — nothing waits, but the provider refused some chunks
 * (those are found by full text only). `chunks`, `embedded` and `failed`
 * count the document's chunks.
 */
export interface EmbeddingState {
  status: 'off' | 'pending' | 'ready' | 'failed';
  chunks: number;
  embedded: number;
  failed: number;
}

/**
 * The state of a document from its counts in the index; `counts` null:
 * embeddings are off (then `chunks` is the document's own count).
 */
export function embeddingState(chunks: number, counts: EmbeddingCounts | null | undefined): EmbeddingState {
  if (counts === null) return { status: 'off', chunks, embedded: 0, failed: 0 };
  const total = counts?.chunks ?? 0;
  const embedded = counts?.embedded ?? 0;
  const failed = counts?.refused ?? 0;
  const status = embedded + failed < total ? 'pending' : failed > 0 ? 'failed' : 'ready';
  return { status, chunks: total, embedded, failed };
}
