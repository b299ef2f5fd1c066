import type { MemoryRecord } from './memory.repo.js';

/** The wire shape of a memory entry (spec: Memory entry; DECISIONS §9). */
export interface MemoryView {
  id: string;
  key: string | null;
  content: string;
  tags: string[];
  created_at: string;
  last_accessed: string;
  /** The match score in 0..1 of a search with a query; 0 otherwise. */
  relevance_score: number;
}

/** Presents an entry with its score (rounded to 4 decimals). */
export function presentMemory(record: MemoryRecord, score = 0): MemoryView {
  return {
    id: record.id,
    key: record.key,
    content: record.content,
    tags: record.tags,
    created_at: record.createdAt,
    last_accessed: record.lastAccessed,
    relevance_score: Math.round(score * 10_000) / 10_000,
  };
}
