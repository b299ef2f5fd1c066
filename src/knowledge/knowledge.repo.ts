import { createHash } from 'node:crypto';
import type { Selectable } from 'kysely';
import { canonicalJson } from '../lib/json.js';
import type { DocFilter, Executor } from '../search/index.js';

/** `knowledge` (migration 006_memory_knowledge): one row per knowledge document, its text kept for reindexing. */
export interface KnowledgeTable {
  id: string;
  title: string;
  source: string;
  /** The full text as posted (up to 10 MiB). */
  content: string;
  /** JSON object as text. */
  metadata: string;
  chunk_count: number;
  /** UTF-8 bytes of `content`. */
  size_bytes: number;
  created_at: string;
  /** Moves on every (re)indexing. */
  indexed_at: string;
}

/** `knowledge_metadata`: one row per top-level metadata key, for the `filter` equalities. */
export interface KnowledgeMetadataTable {
  knowledge_id: string;
  key: string;
  /** SHA-256 hex of the value's canonical JSON (`metadataValueHash`). */
  value_hash: string;
}

declare module '../store/database.js' {
  /** `Database` with the knowledge tables of 006_memory_knowledge. */
  interface Database {
    knowledge: KnowledgeTable;
    knowledge_metadata: KnowledgeMetadataTable;
  }
}

/** A knowledge document as stored, without its text. */
export interface KnowledgeRecord {
  id: string;
  title: string;
  source: string;
  metadata: Record<string, unknown>;
  chunkCount: number;
  sizeBytes: number;
  createdAt: string;
  indexedAt: string;
}

/** Filters of a knowledge listing, combined with AND. */
export interface KnowledgeFilters {
  /** Exactly this source. */
  source?: string | undefined;
  /** Metadata equalities: every key must be present with a value equal (as JSON) to the given one. */
  metadata?: Record<string, unknown> | undefined;
}

/** Inserts a document and its metadata keys. */
export async function insertKnowledge(ex: Executor, record: KnowledgeRecord, content: string): Promise<void> {
  await ex
    .insertInto('knowledge')
    .values({
      id: record.id,
      title: record.title,
      source: record.source,
      content,
      metadata: JSON.stringify(record.metadata),
      chunk_count: record.chunkCount,
      size_bytes: record.sizeBytes,
      created_at: record.createdAt,
      indexed_at: record.indexedAt,
    })
    .execute();
  const pairs = Object.entries(record.metadata);
  for (let i = 0; i < pairs.length; i += 200) {
    await ex
      .insertInto('knowledge_metadata')
      .values(
        pairs
          .slice(i, i + 200)
          .map(([key, value]) => ({ knowledge_id: record.id, key, value_hash: metadataValueHash(value) })),
      )
      .execute();
  }
}

/** The document `id`, or null. */
export async function getKnowledge(ex: Executor, id: string): Promise<KnowledgeRecord | null> {
  const row = await ex.selectFrom('knowledge').select(RECORD_COLUMNS).where('id', '=', id).executeTakeFirst();
  return row ? toKnowledge(row) : null;
}

/** The text of document `id`, or null. */
export async function getKnowledgeContent(ex: Executor, id: string): Promise<string | null> {
  const row = await ex.selectFrom('knowledge').select('content').where('id', '=', id).executeTakeFirst();
  return row ? row.content : null;
}

/** The documents with these ids (missing ones are absent from the map). */
export async function knowledgeByIds(ex: Executor, ids: readonly string[]): Promise<Map<string, KnowledgeRecord>> {
  const out = new Map<string, KnowledgeRecord>();
  for (let i = 0; i < ids.length; i += 500) {
    const rows = await ex
      .selectFrom('knowledge')
      .select(RECORD_COLUMNS)
      .where('id', 'in', ids.slice(i, i + 500))
      .execute();
    for (const row of rows) out.set(row.id, toKnowledge(row));
  }
  return out;
}

/** Records a reindexing; false when the document is gone. */
export async function markIndexed(
  ex: Executor,
  id: string,
  input: { chunkCount: number; indexedAt: string },
): Promise<boolean> {
  const result = await ex
    .updateTable('knowledge')
    .set({ chunk_count: input.chunkCount, indexed_at: input.indexedAt })
    .where('id', '=', id)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Deletes document `id` and its metadata keys; false when it did not exist. */
export async function deleteKnowledge(ex: Executor, id: string): Promise<boolean> {
  await ex.deleteFrom('knowledge_metadata').where('knowledge_id', '=', id).execute();
  const result = await ex.deleteFrom('knowledge').where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** The newest `limit` documents matching `filters` (by id: creation order). */
export async function listKnowledge(
  ex: Executor,
  filters: KnowledgeFilters,
  limit: number,
): Promise<KnowledgeRecord[]> {
  const rows = await filteredKnowledge(ex, filters).select(RECORD_COLUMNS).orderBy('id', 'desc').limit(limit).execute();
  return rows.map(toKnowledge);
}

/** The ids of the documents matching `filters`, as a subquery for the search engine; undefined without filters. */
export function knowledgeFilter(ex: Executor, filters: KnowledgeFilters): DocFilter | undefined {
  const metadataKeys = Object.keys(filters.metadata ?? {});
  if (filters.source === undefined && metadataKeys.length === 0) return undefined;
  return filteredKnowledge(ex, filters).select('knowledge.id as id');
}

/**
 * SHA-256 hex of the canonical JSON of a metadata value (object keys
 * sorted at every level), so equal values compare equal whatever their key
 * order, and values of any size fit an index.
 */
export function metadataValueHash(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}

const RECORD_COLUMNS = [
  'id',
  'title',
  'source',
  'metadata',
  'chunk_count',
  'size_bytes',
  'created_at',
  'indexed_at',
] as const;

/** `select … from knowledge` restricted by `filters`. */
function filteredKnowledge(ex: Executor, filters: KnowledgeFilters) {
  let query = ex.selectFrom('knowledge');
  if (filters.source !== undefined) query = query.where('knowledge.source', '=', filters.source);
  for (const [key, value] of Object.entries(filters.metadata ?? {})) {
    const hash = metadataValueHash(value);
    query = query.where((eb) =>
      eb.exists(
        eb
          .selectFrom('knowledge_metadata')
          .select('knowledge_metadata.key')
          .whereRef('knowledge_metadata.knowledge_id', '=', 'knowledge.id')
          .where('knowledge_metadata.key', '=', key)
          .where('knowledge_metadata.value_hash', '=', hash),
      ),
    );
  }
  return query;
}

function toKnowledge(row: Omit<Selectable<KnowledgeTable>, 'content'>): KnowledgeRecord {
  const metadata: unknown = JSON.parse(row.metadata);
  return {
    id: row.id,
    title: row.title,
    source: row.source,
    metadata:
      metadata !== null && typeof metadata === 'object' && !Array.isArray(metadata)
        ? (metadata as Record<string, unknown>)
        : {},
    chunkCount: row.chunk_count,
    sizeBytes: row.size_bytes,
    createdAt: row.created_at,
    indexedAt: row.indexed_at,
  };
}
