import type { CapabilityMigration } from './index.js';

/**
 * Migration 006_memory_knowledge: memory entries (with their tags), knowledge
 * documents (with their metadata pairs) and the shared search index.
 *
 * - `search_chunks` holds every indexed chunk of every collection
 *   (`memory`, `knowledge`), with its embedding (little-endian float32 bytes,
 *   unit length) once one exists. `id` is never reused (SQLite
 *   `autoincrement`, PostgreSQL `bigserial`), so a late embedding can never
 *   land on a chunk that replaced the one it was computed for.
 * - Full text: SQLite keeps one contentless FTS5 table per collection
 *   (`memory_fts`, `knowledge_fts`; rowid = chunk id, deletable) fed with the
 *   engine's normalised tokens; PostgreSQL keeps a `tsvector` column built
 *   from the same tokens, under one partial GIN index per collection.
 *   Both sides index exactly the same terms (src/search/terms.ts).
 * - `memory_tags` and `knowledge_metadata` turn the tag and metadata filters
 *   into plain indexed equalities on both databases (no JSON functions); a
 *   metadata value is compared by the SHA-256 of its canonical JSON, so any
 *   value size fits the index.
 *
 * PostgreSQL adds `collate "C"` on sorted or compared text, as in 002.
 */
export const migration006: CapabilityMigration = {
  name: '006_memory_knowledge',
  sqlite: [
    `create table memories (
      id text primary key,
      key text null unique,
      content text not null,
      tags text not null default '[]',
      created_at text not null,
      updated_at text not null,
      last_accessed text not null
    )`,
    'create index memories_by_created on memories (created_at, id)',
    `create table memory_tags (
      memory_id text not null,
      tag text not null,
      primary key (memory_id, tag)
    )`,
    'create index memory_tags_by_tag on memory_tags (tag, memory_id)',
    `create table knowledge (
      id text primary key,
      title text not null,
      source text not null,
      content text not null,
      metadata text not null default '{}',
      chunk_count integer not null,
      size_bytes integer not null,
      created_at text not null,
      indexed_at text not null
    )`,
    'create index knowledge_by_source on knowledge (source, id)',
    `create table knowledge_metadata (
      knowledge_id text not null,
      key text not null,
      value_hash text not null,
      primary key (knowledge_id, key)
    )`,
    'create index knowledge_metadata_by_pair on knowledge_metadata (key, value_hash, knowledge_id)',
    `create table search_chunks (
      id integer primary key autoincrement,
      collection text not null,
      doc_id text not null,
      chunk integer not null,
      text text not null,
      embedding blob null,
      embedding_model text null
    )`,
    'create unique index search_chunks_by_doc on search_chunks (collection, doc_id, chunk)',
    'create index search_chunks_recent on search_chunks (collection, id)',
    'create index search_chunks_unembedded on search_chunks (id) where embedding_model is null',
    // One contentless FTS5 table per collection (rowid = search_chunks.id), so a collection's
    // ranking statistics and scans never include the other's chunks.
    `create virtual table memory_fts using fts5(
      body,
      content = '',
      contentless_delete = 1,
      tokenize = 'unicode61 remove_diacritics 2'
    )`,
    `create virtual table knowledge_fts using fts5(
      body,
      content = '',
      contentless_delete = 1,
      tokenize = 'unicode61 remove_diacritics 2'
    )`,
  ],
  postgres: [
    `create table memories (
      id text collate "C" primary key,
      key text collate "C" null unique,
      content text not null,
      tags text not null default '[]',
      created_at text collate "C" not null,
      updated_at text collate "C" not null,
      last_accessed text collate "C" not null
    )`,
    'create index memories_by_created on memories (created_at, id)',
    `create table memory_tags (
      memory_id text collate "C" not null,
      tag text collate "C" not null,
      primary key (memory_id, tag)
    )`,
    'create index memory_tags_by_tag on memory_tags (tag, memory_id)',
    `create table knowledge (
      id text collate "C" primary key,
      title text not null,
      source text collate "C" not null,
      content text not null,
      metadata text not null default '{}',
      chunk_count integer not null,
      size_bytes integer not null,
      created_at text collate "C" not null,
      indexed_at text collate "C" not null
    )`,
    'create index knowledge_by_source on knowledge (source, id)',
    `create table knowledge_metadata (
      knowledge_id text collate "C" not null,
      key text collate "C" not null,
      value_hash text collate "C" not null,
      primary key (knowledge_id, key)
    )`,
    'create index knowledge_metadata_by_pair on knowledge_metadata (key, value_hash, knowledge_id)',
    `create table search_chunks (
      id bigserial primary key,
      collection text collate "C" not null,
      doc_id text collate "C" not null,
      chunk integer not null,
      text text not null,
      tsv tsvector not null,
      embedding bytea null,
      embedding_model text null
    )`,
    'create unique index search_chunks_by_doc on search_chunks (collection, doc_id, chunk)',
    'create index search_chunks_recent on search_chunks (collection, id)',
    'create index search_chunks_unembedded on search_chunks (id) where embedding_model is null',
    // One partial GIN index per collection: a collection's matches never scan the other's.
    `create index search_chunks_tsv_memory on search_chunks using gin (tsv) where collection = 'memory'`,
    `create index search_chunks_tsv_knowledge on search_chunks using gin (tsv) where collection = 'knowledge'`,
  ],
};
