import { type EmbeddingState, snippet } from '../search/index.js';
import type { KnowledgeEntry, KnowledgeItem } from './knowledge.service.js';

/** The wire shape of a knowledge entry (spec: Knowledge entry; DECISIONS §9). */
export interface KnowledgeView {
  id: string;
  title: string;
  source: string;
  chunk_count: number;
  indexed_at: string;
  size_bytes: number;
  metadata: Record<string, unknown>;
  /** How far vector search covers the document (`off` without an embeddings provider). */
  embedding: EmbeddingState;
}

/** A listed entry; with a query it adds `score` (0..1) and its best chunks as snippets. */
export interface KnowledgeListView extends KnowledgeView {
  score?: number;
  matches?: Array<{ chunk: number; text: string }>;
}

/** Presents one entry. */
export function presentKnowledge(record: KnowledgeEntry): KnowledgeView {
  return {
    id: record.id,
    title: record.title,
    source: record.source,
    chunk_count: record.chunkCount,
    indexed_at: record.indexedAt,
    size_bytes: record.sizeBytes,
    metadata: record.metadata,
    embedding: { ...record.embedding },
  };
}

/** Presents a listed entry; match texts become snippets around the query's terms. */
export function presentKnowledgeItem(item: KnowledgeItem, terms: readonly string[]): KnowledgeListView {
  const view: KnowledgeListView = presentKnowledge(item.record);
  if (item.score !== undefined) view.score = roundScore(item.score);
  if (item.matches) view.matches = item.matches.map((m) => ({ chunk: m.chunk, text: snippet(m.text, terms) }));
  return view;
}

/** A score rounded to 4 decimals. */
export function roundScore(score: number): number {
  return Math.round(score * 10_000) / 10_000;
}
