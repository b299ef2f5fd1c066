import { errors } from '../http/errors.js';
import { type Clock, isoTime } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { Collection, SearchEngine } from '../search/index.js';
import { chunkText } from '../search/index.js';
import type { Store } from '../store/index.js';
import {
  DEFAULT_MEMORY_OWNER,
  type MemoryFilters,
  type MemoryRecord,
  deleteMemory,
  findMemory,
  insertMemory,
  listMemories,
  memoriesByIds,
  memoryFilter,
  touchMemories,
  updateMemory,
} from './memory.repo.js';

/** The search-engine collection of memory entries. */
export const MEMORY_COLLECTION: Collection = 'memory';

/** Id prefix of memory entries; keys may not start with it (an id and a key must never be confused). */
export const MEMORY_ID_PREFIX = 'mem_';

/** Most entries a query search ranks (its `total` is capped there). */
export const MEMORY_SEARCH_CAP = 1000;

/** `key` is already used by another entry. */
export class MemoryKeyTakenError extends Error {
  constructor(readonly key: string) {
    super(`memory key ${JSON.stringify(key)} is already used`);
    this.name = 'MemoryKeyTakenError';
  }
}

/** A new entry. `tags` are de-duplicated, order kept. */
export interface NewMemory {
  content: string;
  tags?: readonly string[] | undefined;
  key?: string | undefined;
  /** Whose memory (`principal:<id>`, `agent:<id>`); default the default principal's. */
  owner?: string | undefined;
}

/** A listing or search of entries (DECISIONS §9). */
export interface MemoryQuery extends MemoryFilters {
  /** Ranked search when non-blank; otherwise newest first. */
  query?: string | undefined;
  limit: number;
  offset: number;
  signal?: AbortSignal | undefined;
}

/** An entry with its match score (0 without a query). */
export interface ScoredMemory {
  record: MemoryRecord;
  score: number;
}

/** What MemoryService needs. */
export interface MemoryServiceOptions {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  search: SearchEngine;
  /** Told of every committed change (the live feed's `memory` topic); must not throw. */
  onChange?: (event: MemoryEvent, entry: MemoryRecord | { id: string }) => void;
}

/** What happened to an entry: the live feed's event names. */
export type MemoryEvent = 'created' | 'updated' | 'deleted';

const MAX_UPDATE_ATTEMPTS = 5;

/**
 * The agent's persistent memory: entries independent of sessions, indexed
 * for hybrid search (content and tags), addressed by id or by an optional
 * unique key. Every write changes the entry and its index in one
 * group-commit transaction.
 */
export class MemoryService {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #ids: IdGenerator;
  readonly #search: SearchEngine;
  readonly #onChange: NonNullable<MemoryServiceOptions['onChange']>;
  /** The last write queued per entry id (updates to one entry take turns; the map holds only busy entries). */
  readonly #writes = new Map<string, Promise<void>>();

  constructor(options: MemoryServiceOptions) {
    this.#store = options.store;
    this.#clock = options.clock;
    this.#ids = options.ids;
    this.#search = options.search;
    this.#onChange = options.onChange ?? (() => undefined);
  }

  /** Creates an entry (`last_accessed` = `created_at` = now). Throws MemoryKeyTakenError for a used key. */
  async create(input: NewMemory, signal?: AbortSignal): Promise<MemoryRecord> {
    const tags = distinct(input.tags ?? []);
    const key = input.key ?? null;
    const owner = input.owner ?? DEFAULT_MEMORY_OWNER;
    if (key !== null && (await findByKey(this.#store, key, owner))) throw new MemoryKeyTakenError(key);
    const doc = await this.#search.prepare(chunksOf(input.content, tags), signal);
    const now = isoTime(this.#clock.now());
    const record: MemoryRecord = {
      id: this.#ids.next('mem'),
      owner,
      key,
      content: input.content,
      tags,
      createdAt: now,
      updatedAt: now,
      lastAccessed: now,
    };
    await this.#store.writer.run(async (trx) => {
      if (key !== null) {
        const taken = await trx
          .selectFrom('memories')
          .select('id')
          .where('key', '=', key)
          .where('owner', '=', owner)
          .executeTakeFirst();
        if (taken) throw new MemoryKeyTakenError(key);
      }
      await insertMemory(trx, record);
      await this.#search.replace(trx, MEMORY_COLLECTION, record.id, doc);
    });
    this.#search.written(doc);
    this.#onChange('created', record);
    return record;
  }

  /**
   * Changes content and/or tags of the entry with this id or key and
   * reindexes it; null when there is none. A concurrent update is never
   * silently overwritten: updates to one entry take turns in this process,
   * and one racing another process is re-applied on the newer version.
   * Throws ApiError 503 when other processes kept changing the entry.
   */
  async update(
    idOrKey: string,
    change: { content?: string | undefined; tags?: readonly string[] | undefined },
    signal?: AbortSignal,
    owner?: string,
  ): Promise<MemoryRecord | null> {
    const found = await findMemory(this.#store.db, idOrKey, owner);
    if (!found) return null;
    return this.#oneAtATime(found.id, () => this.#update(found.id, change, signal));
  }

  async #update(
    id: string,
    change: { content?: string | undefined; tags?: readonly string[] | undefined },
    signal: AbortSignal | undefined,
  ): Promise<MemoryRecord | null> {
    for (let attempt = 0; attempt < MAX_UPDATE_ATTEMPTS; attempt++) {
      const current = await findMemory(this.#store.db, id);
      if (!current) return null;
      const content = change.content ?? current.content;
      const tags = change.tags ? distinct(change.tags) : current.tags;
      const doc = await this.#search.prepare(chunksOf(content, tags), signal);
      const updatedAt = isoTime(this.#clock.now());
      const applied = await this.#store.writer.run(async (trx) => {
        const ok = await updateMemory(trx, current.id, current, { content, tags, updatedAt });
        if (ok) await this.#search.replace(trx, MEMORY_COLLECTION, current.id, doc);
        return ok;
      });
      if (applied) {
        this.#search.written(doc);
        const updated = { ...current, content, tags, updatedAt };
        this.#onChange('updated', updated);
        return updated;
      }
    }
    throw errors.unavailable('the memory entry kept changing under concurrent updates; retry');
  }

  /** Runs `work` after every earlier write to entry `id` in this process has settled. */
  async #oneAtATime<T>(id: string, work: () => Promise<T>): Promise<T> {
    const run = (this.#writes.get(id) ?? Promise.resolve()).then(work);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.#writes.set(id, settled);
    try {
      return await run;
    } finally {
      if (this.#writes.get(id) === settled) this.#writes.delete(id);
    }
  }

  /** Deletes the entry with this id or key (and its index); returns its id, or null when there is none. */
  async remove(idOrKey: string, owner?: string): Promise<string | null> {
    const current = await findMemory(this.#store.db, idOrKey, owner);
    if (!current) return null;
    const deleted = await this.#store.writer.run(async (trx) => {
      const ok = await deleteMemory(trx, current.id);
      if (ok) await this.#search.remove(trx, MEMORY_COLLECTION, current.id);
      return ok;
    });
    if (!deleted) return null;
    this.#onChange('deleted', { id: current.id });
    return current.id;
  }

  /** The entry with this id or key, or null. Reading one entry does not move `last_accessed`. */
  async get(idOrKey: string, owner?: string): Promise<MemoryRecord | null> {
    return findMemory(this.#store.db, idOrKey, owner);
  }

  /**
   * Lists entries. With a non-blank `query`: ranked by hybrid search
   * (score 0..1, best first; `total` counts the ranked matches, at most
   * MEMORY_SEARCH_CAP), and the returned entries' `last_accessed` moves to
   * now. Without: newest first, score 0, nothing touched.
   */
  async list(query: MemoryQuery): Promise<{ items: ScoredMemory[]; total: number }> {
    const filters: MemoryFilters = { tag: query.tag, since: query.since, key: query.key, owner: query.owner };
    if (query.query === undefined || query.query.trim() === '') {
      const page = await listMemories(this.#store.db, filters, { limit: query.limit, offset: query.offset });
      return { items: page.items.map((record) => ({ record, score: 0 })), total: page.total };
    }
    const result = await this.#search.search({
      collection: MEMORY_COLLECTION,
      query: query.query,
      candidates: Math.max(MEMORY_SEARCH_CAP, query.offset + query.limit),
      allowed: memoryFilter(this.#store.db, filters),
      matchesPerDoc: 1,
      signal: query.signal,
    });
    const ranked = result.hits.slice(0, MEMORY_SEARCH_CAP);
    const page = ranked.slice(query.offset, query.offset + query.limit);
    const records = await memoriesByIds(
      this.#store.db,
      page.map((hit) => hit.docId),
    );
    const now = isoTime(this.#clock.now());
    const items: ScoredMemory[] = [];
    for (const hit of page) {
      const record = records.get(hit.docId);
      if (record) items.push({ record: { ...record, lastAccessed: now }, score: hit.score });
    }
    await this.#touch(
      items.map((item) => item.record.id),
      now,
    );
    return { items, total: ranked.length };
  }

  /**
   * The agent's save (`memory_save`): creates the entry, or, when `key` is
   * already used, updates that entry (content, and tags when given) instead
   * of failing. The entry's `last_accessed` moves either way.
   */
  async save(input: NewMemory, signal?: AbortSignal): Promise<{ record: MemoryRecord; created: boolean }> {
    for (let attempt = 0; attempt < MAX_UPDATE_ATTEMPTS; attempt++) {
      if (input.key !== undefined) {
        const existing = await findByKey(this.#store, input.key, input.owner ?? DEFAULT_MEMORY_OWNER);
        if (existing) {
          const change = { content: input.content, tags: input.tags };
          const updated = await this.update(existing.id, change, signal, input.owner ?? DEFAULT_MEMORY_OWNER);
          if (updated) {
            const now = isoTime(this.#clock.now());
            await this.#touch([updated.id], now);
            return { record: { ...updated, lastAccessed: now }, created: false };
          }
          continue; // deleted meanwhile: create it
        }
      }
      try {
        return { record: await this.create(input, signal), created: true };
      } catch (error) {
        if (!(error instanceof MemoryKeyTakenError)) throw error;
        // Taken meanwhile: update that entry instead.
      }
    }
    throw errors.unavailable('memory_save: the key kept changing under concurrent writes; retry');
  }

  async #touch(ids: readonly string[], now: string): Promise<void> {
    if (ids.length === 0) return;
    await this.#store.writer.run((trx) => touchMemories(trx, ids, now));
  }
}

async function findByKey(store: Store, key: string, owner: string): Promise<{ id: string } | undefined> {
  return store.db
    .selectFrom('memories')
    .select('id')
    .where('key', '=', key)
    .where('owner', '=', owner)
    .executeTakeFirst();
}

/** The indexed text of an entry: its content, then its tags (so a query for a tag finds it). */
function chunksOf(content: string, tags: readonly string[]): string[] {
  return chunkText(tags.length > 0 ? `${content}\n\n${tags.join(' ')}` : content);
}

function distinct(values: readonly string[]): string[] {
  return [...new Set(values)];
}
