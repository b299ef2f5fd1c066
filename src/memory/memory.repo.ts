import type { Selectable } from 'kysely';
import type { DocFilter, Executor } from '../search/index.js';

/** `memories` (migration 006_memory_knowledge): the agent's persistent memory entries. */
export interface MemoriesTable {
  id: string;
  /** Whose memory it is: `principal:<id>` or `agent:<id>` (migration 013); keys are unique per owner. */
  owner: string;
  /** Optional unique key (DECISIONS §9, variant B); never starts with `mem_`. */
  key: string | null;
  content: string;
  /** JSON array of strings, in the order given (also one row each in `memory_tags`). */
  tags: string;
  created_at: string;
  updated_at: string;
  /** Set at creation; moves when a search with a query or the agent returns the entry. */
  last_accessed: string;
}

/** `memory_tags`: one row per tag of an entry, for the `tag` filter. */
export interface MemoryTagsTable {
  memory_id: string;
  tag: string;
}

declare module '../store/database.js' {
  /** `Database` with the memory tables of 006_memory_knowledge. */
  interface Database {
    memories: MemoriesTable;
    memory_tags: MemoryTagsTable;
  }
}

/** A memory entry as stored. */
export interface MemoryRecord {
  id: string;
  owner: string;
  key: string | null;
  content: string;
  tags: string[];
  createdAt: string;
  updatedAt: string;
  lastAccessed: string;
}

/** Filters of a memory listing; all optional, combined with AND. */
export interface MemoryFilters {
  /** Only this owner's entries (`principal:<id>`, `agent:<id>`); absent: every owner's. */
  owner?: string | undefined;
  /** Entries carrying this tag. */
  tag?: string | undefined;
  /** Entries created at or after this ISO timestamp. */
  since?: string | undefined;
  /** The entry with exactly this key. */
  key?: string | undefined;
}

/** Inserts an entry and its tags. Rejects with the driver's unique violation on a duplicate id or key. */
export async function insertMemory(ex: Executor, record: MemoryRecord): Promise<void> {
  await ex
    .insertInto('memories')
    .values({
      id: record.id,
      owner: record.owner,
      key: record.key,
      content: record.content,
      tags: JSON.stringify(record.tags),
      created_at: record.createdAt,
      updated_at: record.updatedAt,
      last_accessed: record.lastAccessed,
    })
    .execute();
  await insertTags(ex, record.id, record.tags);
}

/**
 * Sets content and tags of entry `id`, provided they still are `expected`
 * (optimistic concurrency: a concurrent update is not overwritten blindly).
 * Returns false when the entry is gone or changed meanwhile.
 */
export async function updateMemory(
  ex: Executor,
  id: string,
  expected: { content: string; tags: string[] },
  next: { content: string; tags: string[]; updatedAt: string },
): Promise<boolean> {
  const result = await ex
    .updateTable('memories')
    .set({ content: next.content, tags: JSON.stringify(next.tags), updated_at: next.updatedAt })
    .where('id', '=', id)
    .where('content', '=', expected.content)
    .where('tags', '=', JSON.stringify(expected.tags))
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) return false;
  await ex.deleteFrom('memory_tags').where('memory_id', '=', id).execute();
  await insertTags(ex, id, next.tags);
  return true;
}

/** Deletes entry `id` and its tags; false when it did not exist. */
export async function deleteMemory(ex: Executor, id: string): Promise<boolean> {
  await ex.deleteFrom('memory_tags').where('memory_id', '=', id).execute();
  const result = await ex.deleteFrom('memories').where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** The entry with this id, or else the one with this key; null when neither exists. */
export async function findMemory(ex: Executor, idOrKey: string, owner?: string): Promise<MemoryRecord | null> {
  let byId = ex.selectFrom('memories').selectAll().where('id', '=', idOrKey);
  if (owner !== undefined) byId = byId.where('owner', '=', owner);
  const found = await byId.executeTakeFirst();
  if (found) return toMemory(found);
  // A key is unique per owner: without one, the default principal's (the keys of a single-owner gateway).
  const byKey = await ex
    .selectFrom('memories')
    .selectAll()
    .where('key', '=', idOrKey)
    .where('owner', '=', owner ?? DEFAULT_MEMORY_OWNER)
    .executeTakeFirst();
  return byKey ? toMemory(byKey) : null;
}

/** The owner of entries of the default principal: every entry of a gateway without configured principals. */
export const DEFAULT_MEMORY_OWNER = 'principal:default';

/** The entries with these ids (missing ones are absent from the map). */
export async function memoriesByIds(ex: Executor, ids: readonly string[]): Promise<Map<string, MemoryRecord>> {
  const out = new Map<string, MemoryRecord>();
  for (let i = 0; i < ids.length; i += 500) {
    const rows = await ex
      .selectFrom('memories')
      .selectAll()
      .where('id', 'in', ids.slice(i, i + 500))
      .execute();
    for (const row of rows) out.set(row.id, toMemory(row));
  }
  return out;
}

/**
 * One page of entries matching `filters`, newest first (created_at, then id),
 * and `total`, the number of matches across all pages.
 */
export async function listMemories(
  ex: Executor,
  filters: MemoryFilters,
  page: { limit: number; offset: number },
): Promise<{ items: MemoryRecord[]; total: number }> {
  const filtered = filteredMemories(ex, filters);
  const rows = await filtered
    .selectAll()
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  const count = await filtered.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return { items: rows.map(toMemory), total: Number(count.n) };
}

/** The ids of the entries matching `filters`, as a subquery for the search engine; undefined without filters. */
export function memoryFilter(ex: Executor, filters: MemoryFilters): DocFilter | undefined {
  if (Object.values(filters).every((value) => value === undefined)) return undefined;
  return filteredMemories(ex, filters).select('memories.id as id');
}

/** Sets `last_accessed = now` on these entries (they were returned by a search or used by the agent). */
export async function touchMemories(ex: Executor, ids: readonly string[], now: string): Promise<void> {
  for (let i = 0; i < ids.length; i += 500) {
    await ex
      .updateTable('memories')
      .set({ last_accessed: now })
      .where('id', 'in', ids.slice(i, i + 500))
      .execute();
  }
}

/** `select … from memories` restricted by `filters`. */
function filteredMemories(ex: Executor, filters: MemoryFilters) {
  let query = ex.selectFrom('memories');
  const { tag, since, key, owner } = filters;
  if (owner !== undefined) query = query.where('owner', '=', owner);
  if (tag !== undefined) {
    query = query.where((eb) =>
      eb.exists(
        eb
          .selectFrom('memory_tags')
          .select('memory_tags.tag')
          .whereRef('memory_tags.memory_id', '=', 'memories.id')
          .where('memory_tags.tag', '=', tag),
      ),
    );
  }
  if (since !== undefined) query = query.where('memories.created_at', '>=', since);
  if (key !== undefined) query = query.where('memories.key', '=', key);
  return query;
}

async function insertTags(ex: Executor, id: string, tags: readonly string[]): Promise<void> {
  if (tags.length === 0) return;
  await ex
    .insertInto('memory_tags')
    .values(tags.map((tag) => ({ memory_id: id, tag })))
    .execute();
}

function toMemory(row: Selectable<MemoriesTable>): MemoryRecord {
  const tags: unknown = JSON.parse(row.tags);
  return {
    id: row.id,
    owner: row.owner,
    key: row.key,
    content: row.content,
    tags: Array.isArray(tags) ? tags.filter((tag): tag is string => typeof tag === 'string') : [],
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    lastAccessed: row.last_accessed,
  };
}
